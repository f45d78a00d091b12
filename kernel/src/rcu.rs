//! RCU in the kernel: one `ksync::Rcu` (QSBR) for every online CPU, with its quiescent points
//! and the place where `call_rcu` callbacks run.
//!
//! Quiescent-state-based RCU needs each CPU to say, now and then, "I hold no RCU
//! references". This kernel has no scheduler, so the points are explicit:
//!
//! - the idle loop: an AP that goes to sleep in `hlt` goes offline in RCU terms first (an
//!   extended quiescent state, like Linux's dynticks idle, so a grace period never waits
//!   for a sleeping CPU) and comes online again when it wakes ([`idle_enter`],
//!   [`idle_exit`]);
//! - every cross-CPU call handled from the mailbox (`on_each_cpu`): after the function
//!   returns ([`after_call`]);
//! - [`quiescent`], which long-running kernel code (the benchmark, between batches) calls;
//! - waits on other CPUs: the caller of `on_each_cpu` while its targets run, and code that
//!   wraps a wait in [`extended_qs`] (the benchmark's barriers), are offline meanwhile, so
//!   a grace period never waits for a CPU that is itself waiting for the CPU that drives
//!   it.
//!
//! `call_rcu` callbacks ([`call_rcu`]) run in [`quiescent`], on the CPU that finds their
//! grace period completed, and in [`rcu_barrier`]. Grace periods are completed by
//! [`synchronize_rcu`], which any CPU may call (it goes offline while it waits, as
//! urcu-qsbr's `synchronize_rcu` does, so two CPUs waiting at once do not wait for each
//! other), and by the boot CPU in [`quiescent`] when callbacks are waiting. Only the boot
//! CPU does the latter because no CPU can make it run a cross-CPU call: a CPU that waits
//! there for a grace period can never be the one another CPU's call is waiting for.
//!
//! Code that holds RCU-protected pointers across one of these points must hold a read
//! guard (`ksync::Rcu::read_lock`): a quiescent report inside a read section is refused.
//!
//! The lock that guards the callback queue is ksync's ticket lock of class
//! `rcu_callbacks`; every use of `ksync::Rcu` is in this file.

use crate::percpu;

/// The kernel's RCU state (its callback queue behind ksync's ticket lock).
pub type KernelRcu = ksync::Rcu<ksync::Ticket>;

static RCU: spin::Once<KernelRcu> = spin::Once::new();

/// The RCU state (`None` before [`init`]).
#[must_use]
pub fn get() -> Option<&'static KernelRcu> {
    RCU.get()
}

/// Creates the state with a slot for every online CPU; the boot CPU is online from here
/// on, the APs (asleep in their idle loops) come online when they wake. Runs once, on the
/// boot CPU, after SMP bring-up.
pub fn init() -> &'static KernelRcu {
    RCU.call_once(|| {
        let rcu = KernelRcu::new(percpu::nr_cpu_ids());
        let _ = rcu.online(0);
        rcu
    })
}

/// An idle AP is about to sleep: an extended quiescent state.
pub fn idle_enter() {
    if let Some(rcu) = get() {
        let _ = rcu.offline(percpu::cpu_id());
    }
}

/// An idle AP woke up: it takes part in grace periods again.
pub fn idle_exit() {
    if let Some(rcu) = get() {
        let _ = rcu.online(percpu::cpu_id());
    }
}

/// A cross-CPU call just returned on this CPU: report a quiescent state (refused, and
/// ignored, inside a read section).
pub fn after_call() {
    if let Some(rcu) = get() {
        let _ = rcu.quiescent_state(percpu::cpu_id());
    }
}

/// Runs `wait` (a spin on other CPUs: a barrier, a flag) with the running CPU in an
/// extended quiescent state, so that grace periods do not wait for it meanwhile. Inside a
/// read section the CPU stays online (and then must not wait for a grace period's driver).
pub fn extended_qs<R>(wait: impl FnOnce() -> R) -> R {
    let Some(rcu) = get() else { return wait() };
    let cpu = percpu::cpu_id();
    let was_online = rcu.is_online(cpu).unwrap_or(false);
    let offline = was_online && rcu.offline(cpu).is_ok();
    let r = wait();
    if offline {
        let _ = rcu.online(cpu);
    }
    r
}

/// Reports a quiescent state for the running CPU and runs the callbacks whose grace
/// period has completed. When callbacks or a polled cookie (`start_poll_synchronize_rcu`)
/// wait for a grace period, drives one a step without waiting ([`ksync::Rcu::advance`]):
/// completes the one in flight if every CPU has reported since it started, else starts
/// one. Any CPU may drive, and none waits here for another: a CPU that waited (as the boot
/// CPU once did, with `synchronize_rcu`) would stall until the slowest CPU's next
/// quiescent point on every call. Returns how many callbacks ran.
pub fn quiescent() -> usize {
    let Some(rcu) = get() else { return 0 };
    let cpu = percpu::cpu_id();
    if rcu.quiescent_state(cpu).is_err() {
        return 0;
    }
    if !rcu.has_callbacks() && !rcu.gp_needed() {
        return 0;
    }
    rcu.advance(true);
    // This CPU holds no references after the start either: reporting again lets a grace
    // period that no other CPU holds up (one CPU online) complete in this call.
    if rcu.quiescent_state(cpu).is_ok() {
        rcu.advance(false);
    }
    run_callbacks(rcu)
}

fn run_callbacks(rcu: &KernelRcu) -> usize {
    rcu.run_callbacks()
}

/// Queues `f` to run after a grace period that starts after this call (`call_rcu()`).
pub fn call_rcu(f: impl FnOnce() + Send + 'static) {
    let Some(rcu) = get() else {
        // Before RCU exists only the boot CPU runs: nobody can hold a reference.
        f();
        return;
    };
    rcu.call_rcu(f);
}

/// Waits until every online CPU has passed a quiescent state (`synchronize_rcu()`).
/// The caller holds no RCU references (it must not be in a read section); it is offline
/// while it waits. Returns the grace period that completed.
pub fn synchronize_rcu() -> Result<u64, ksync::RcuError> {
    let rcu = get().ok_or(ksync::RcuError::CpuOffline)?;
    let cpu = percpu::cpu_id();
    let was_online = rcu.is_online(cpu)?;
    if was_online {
        rcu.offline(cpu)?;
    }
    let gp = rcu.synchronize(None);
    if was_online {
        rcu.online(cpu)?;
    }
    gp
}

/// Waits for a grace period and runs every callback it covers (`rcu_barrier()`).
pub fn rcu_barrier() -> Result<usize, ksync::RcuError> {
    synchronize_rcu()?;
    Ok(get().map_or(0, run_callbacks))
}

/// The newest grace period known to have completed (0 before [`init`]).
#[must_use]
pub fn completed() -> u64 {
    get().map_or(0, KernelRcu::completed)
}

/// Callbacks queued and not yet run (by any user of the domain: the memcg tree queues
/// its own through `ksync::Rcu::call_rcu`).
#[must_use]
pub fn pending() -> usize {
    get().map_or(0, KernelRcu::pending_callbacks)
}
