//! The plugin's arguments (`-plugin file=libkx_coherence.so,mark=0x...,out=PATH,...`), parsed
//! and rendered by the same code, so the runner cannot pass what the plugin refuses.

use crate::model::Geometry;
use std::path::PathBuf;

/// How the plugin is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Physical address of the kernel's mark page (`mark=`, required).
    pub mark: u64,
    /// Where the JSON lines go (`out=`, required).
    pub out: PathBuf,
    /// Private cache per vCPU in KiB (`cache_kib=`, default 1024).
    pub cache_kib: u64,
    /// Ways per set (`ways=`, default 8).
    pub ways: usize,
    /// Also model 128-byte units (`pairs=on|off`, default on).
    pub pairs: bool,
    /// Sockets: vCPU `i` sits on socket `i % sockets` (`sockets=`, default 1), as the runner
    /// spreads vCPUs over NUMA nodes.
    pub sockets: u32,
    /// Hot lines reported per run and unit size (`top=`, default 16).
    pub top: usize,
    /// Model the caches (`model=on|off`, default on). Off, the plugin only counts: each
    /// window's instructions, stores and locked RMWs (it registers store callbacks only, for
    /// the marks and the RMWs, so loads are not seen and stay 0), at a fraction of the
    /// model's cost: `kx bench`'s per-variant cost boot.
    pub model: bool,
}

impl Config {
    /// The defaults with the two required values.
    #[must_use]
    pub fn new(mark: u64, out: PathBuf) -> Config {
        Config {
            mark,
            out,
            cache_kib: 1024,
            ways: 8,
            pairs: true,
            sockets: 1,
            top: 16,
            model: true,
        }
    }

    /// Parses `key=value` arguments; every key once, none unknown.
    pub fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Config, String> {
        let mut mark = None;
        let mut out = None;
        let mut c = Config::new(0, PathBuf::new());
        let mut seen = Vec::new();
        for a in args {
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| format!("argument `{a}` is not key=value"))?;
            if seen.contains(&k) {
                return Err(format!("`{k}` given twice"));
            }
            seen.push(k);
            let num = |v: &str| -> Result<u64, String> {
                let r = match v.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => v.parse(),
                };
                r.map_err(|_| format!("`{k}={v}`: not a number"))
            };
            match k {
                "mark" => {
                    let m = num(v)?;
                    if m % abi::coherence::MARK_SIZE != 0 {
                        return Err(format!("mark={v} is not page-aligned"));
                    }
                    mark = Some(m);
                }
                "out" if !v.is_empty() => out = Some(PathBuf::from(v)),
                "cache_kib" => c.cache_kib = num(v)?,
                "ways" => c.ways = num(v)? as usize,
                "pairs" => {
                    c.pairs = match v {
                        "on" => true,
                        "off" => false,
                        _ => return Err(format!("pairs={v}: give on or off")),
                    }
                }
                "sockets" => {
                    c.sockets = num(v)? as u32;
                    if c.sockets == 0 || c.sockets > 64 {
                        return Err(format!("sockets={v}: give 1 to 64"));
                    }
                }
                "top" => c.top = num(v)? as usize,
                "model" => {
                    c.model = match v {
                        "on" => true,
                        "off" => false,
                        _ => return Err(format!("model={v}: give on or off")),
                    }
                }
                _ => {
                    return Err(format!(
                        "unknown argument `{a}` (known: mark, out, cache_kib, ways, pairs, \
                         sockets, top, model)"
                    ));
                }
            }
        }
        c.mark = mark.ok_or("mark=<physical address of the mark page> is required")?;
        c.out = out.ok_or("out=<path of the JSON lines> is required")?;
        for g in c.geometries() {
            g.check()?;
        }
        Ok(c)
    }

    /// The arguments that parse back into this configuration.
    #[must_use]
    pub fn to_args(&self) -> Vec<String> {
        vec![
            format!("mark={:#x}", self.mark),
            format!("out={}", self.out.display()),
            format!("cache_kib={}", self.cache_kib),
            format!("ways={}", self.ways),
            format!("pairs={}", if self.pairs { "on" } else { "off" }),
            format!("sockets={}", self.sockets),
            format!("top={}", self.top),
            format!("model={}", if self.model { "on" } else { "off" }),
        ]
    }

    /// The unit sizes modelled: 64, and 128 with pairs on; none with the model off.
    #[must_use]
    pub fn geometries(&self) -> Vec<Geometry> {
        if !self.model {
            return Vec::new();
        }
        let g = |line_bytes| Geometry {
            line_bytes,
            cache_kib: self.cache_kib,
            ways: self.ways,
        };
        if self.pairs {
            vec![g(64), g(128)]
        } else {
            vec![g(64)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_round_trip() {
        let mut c = Config::new(0x20_0000, "/tmp/x y.jsonl".into());
        c.pairs = false;
        c.sockets = 2;
        c.model = false;
        let args = c.to_args();
        assert_eq!(Config::parse(args.iter().map(String::as_str)), Ok(c));
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let p = |a: &[&str]| Config::parse(a.iter().copied()).unwrap_err();
        assert!(p(&["out=/x"]).contains("mark="));
        assert!(p(&["mark=0x1000"]).contains("out="));
        assert!(p(&["mark=0x1001", "out=/x"]).contains("page-aligned"));
        assert!(p(&["mark=0x1000", "out=/x", "pairs=maybe"]).contains("on or off"));
        assert!(p(&["mark=0x1000", "out=/x", "colour=red"]).contains("unknown"));
        assert!(p(&["mark=0x1000", "out=/x", "cache_kib=1000"]).contains("power-of-two"));
        assert!(p(&["mark=0x1000", "mark=0x2000"]).contains("twice"));
        assert!(p(&["mark"]).contains("key=value"));
        assert!(p(&["mark=0x1000", "out=/x", "model=maybe"]).contains("on or off"));
    }
}
