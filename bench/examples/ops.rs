//! A fixed number of one scenario's operations on one host thread, for instruction counts.
//!
//! `scripts/callgrind.sh` runs this under `valgrind --tool=callgrind` with collection only
//! inside [`measured`] (one timed batch of the instance: what the engine times), after
//! warm-up batches that fill the per-CPU caches (page allocator lists, memcg stock, folio
//! batches). The instance is the host-thread mode's (`kx bench --host`): the scenario code
//! of `bench::scenarios` on [`SoftHost`]'s fault core (the same `mm`, `memcg`, `lru` and
//! `ksync` code the kernel runs, with the software MMU in place of page tables and traps).
//! Untimed work (`Instance::untimed`, seed003's unmap) runs outside [`measured`], as the
//! engine keeps it out of the timed part.
//!
//! Usage: `ops SCENARIO CONFIG VARIANT OPS [WARMUP_OPS]`; prints
//! `ops=N` (the operations done inside [`measured`]) on standard output. Exit status 2 on
//! bad arguments, 1 when the scenario fails.

use bench::engine::{BatchCtx, BenchScenario, Instance, Setup, Storage};
use bench::scenarios::soft_floor::SoftFloor;
use bench::vm::soft::SoftHost;
use std::process::ExitCode;

/// Arena handed to the fault core (touched only as used).
const ARENA_MIB: u64 = 256;

/// One timed batch: the only code callgrind collects in (`--toggle-collect`).
#[inline(never)]
fn measured(inst: &dyn Instance, ctx: &BatchCtx) -> Result<u64, String> {
    inst.run_batch(ctx).map_err(|e| e.to_string())
}

/// Runs batches until `ops` operations are done; with `timed`, each batch inside
/// [`measured`]. Returns the operations done.
fn run(inst: &dyn Instance, host: &SoftHost, ops: u64, timed: bool) -> Result<u64, String> {
    let mut done = 0;
    while done < ops {
        let ctx = BatchCtx {
            cpu: 0,
            index: 0,
            max_ops: ops - done,
            deadline_ns: u64::MAX,
        };
        inst.untimed(&ctx).map_err(|e| e.to_string())?;
        let n = if timed {
            measured(inst, &ctx)?
        } else {
            inst.run_batch(&ctx).map_err(|e| e.to_string())?
        };
        if n == 0 {
            return Err("a batch did no operation".into());
        }
        done += n;
        host.quiescent(0);
    }
    Ok(done)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [s, c, v, n] => n.parse::<u64>().ok().map(|n| (s, c, v, n, 512)),
        [s, c, v, n, w] => n
            .parse::<u64>()
            .ok()
            .zip(w.parse::<u64>().ok())
            .map(|(n, w)| (s, c, v, n, w)),
        _ => None,
    };
    let Some((scenario, config, variant, ops, warmup)) = parsed else {
        eprintln!("usage: ops SCENARIO CONFIG VARIANT OPS [WARMUP_OPS]");
        return ExitCode::from(2);
    };
    ksync::cpu::set_this_thread_cpu(0);
    let host: &'static SoftHost = match SoftHost::new(1, ARENA_MIB) {
        Ok(h) => Box::leak(Box::new(h)),
        Err(e) => {
            eprintln!("ops: host fault core: {e}");
            return ExitCode::FAILURE;
        }
    };
    let registry = bench::scenarios::registry(Box::new(SoftFloor), host);
    let providers: Vec<&dyn BenchScenario> = registry.providers(scenario).collect();
    let Some(provider) = providers
        .into_iter()
        .find(|p| p.variants().contains(&variant.as_str()) && p.supports(config))
    else {
        eprintln!("ops: no scenario `{scenario}` with config `{config}` and variant `{variant}`");
        return ExitCode::from(2);
    };
    let storage = Storage::new();
    let setup = Setup {
        config,
        variant,
        cpus: 1,
        storage: &storage,
    };
    let result = provider
        .instantiate(&setup)
        .map_err(|e| e.to_string())
        .and_then(|inst| {
            run(inst.as_ref(), host, warmup, false)?;
            let done = run(inst.as_ref(), host, ops, true)?;
            inst.check()?;
            inst.teardown().map_err(|e| e.to_string())?;
            Ok(done)
        });
    match result {
        Ok(done) => {
            println!("ops={done}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ops: {scenario} {config} {variant}: {e}");
            ExitCode::FAILURE
        }
    }
}
