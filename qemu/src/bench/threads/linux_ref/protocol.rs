//! The lines between the runner and a Linux-reference worker process, one per message.
//!
//! Runner to worker (stdin): `batch <index> <max_ops> <deadline_ns>` (the deadline on
//! `CLOCK_MONOTONIC`, shared by both processes; `max_ops` and the deadline as the engine's
//! batch asks); end of input ends the worker. Worker to runner (stdout): first
//! `ready memcg <path>` or `ready nomemcg <why>`, then per batch `done <index> <ops>
//! <minflt>` (pages faulted, and the thread's minor faults over the batch) or `error <index>
//! <what>`.

/// A worker's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Started; `Ok(path)`: inside the cgroup at `path`; `Err(why)`: without one.
    Ready(Result<String, String>),
    /// A batch finished.
    Done {
        /// The thread.
        index: usize,
        /// Pages faulted.
        ops: u64,
        /// Minor faults the thread took meanwhile.
        minflt: u64,
    },
    /// A batch failed.
    Error {
        /// The thread.
        index: usize,
        /// What happened.
        what: String,
    },
}

impl Reply {
    /// The line (without the newline).
    #[must_use]
    pub fn line(&self) -> String {
        match self {
            Reply::Ready(Ok(p)) => format!("ready memcg {p}"),
            Reply::Ready(Err(why)) => format!("ready nomemcg {}", one_line(why)),
            Reply::Done { index, ops, minflt } => format!("done {index} {ops} {minflt}"),
            Reply::Error { index, what } => format!("error {index} {}", one_line(what)),
        }
    }

    /// Reads a line.
    #[must_use]
    pub fn parse(line: &str) -> Option<Reply> {
        let line = line.trim_end_matches(['\r', '\n']);
        let (word, rest) = line.split_once(' ')?;
        match word {
            "ready" => {
                let (kind, text) = rest.split_once(' ')?;
                match kind {
                    "memcg" => Some(Reply::Ready(Ok(text.into()))),
                    "nomemcg" => Some(Reply::Ready(Err(text.into()))),
                    _ => None,
                }
            }
            "done" => {
                let mut w = rest.split(' ');
                let r = Reply::Done {
                    index: w.next()?.parse().ok()?,
                    ops: w.next()?.parse().ok()?,
                    minflt: w.next()?.parse().ok()?,
                };
                w.next().is_none().then_some(r)
            }
            "error" => {
                let (index, what) = rest.split_once(' ')?;
                Some(Reply::Error {
                    index: index.parse().ok()?,
                    what: what.into(),
                })
            }
            _ => None,
        }
    }
}

/// A batch request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    /// The worker thread (the engine's CPU index).
    pub index: usize,
    /// At most this many pages.
    pub max_ops: u64,
    /// Stop at the first iteration boundary at or after this `CLOCK_MONOTONIC` time.
    pub deadline_ns: u64,
}

impl Batch {
    /// The line (without the newline).
    #[must_use]
    pub fn line(&self) -> String {
        format!("batch {} {} {}", self.index, self.max_ops, self.deadline_ns)
    }

    /// Reads a line.
    #[must_use]
    pub fn parse(line: &str) -> Option<Batch> {
        let mut w = line.trim_end().split(' ');
        if w.next()? != "batch" {
            return None;
        }
        let b = Batch {
            index: w.next()?.parse().ok()?,
            max_ops: w.next()?.parse().ok()?,
            deadline_ns: w.next()?.parse().ok()?,
        };
        w.next().is_none().then_some(b)
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        for r in [
            Reply::Ready(Ok("/sys/fs/cgroup/kx-linux-ref-1-2".into())),
            Reply::Ready(Err("/sys/fs/cgroup is not a cgroup2 mount".into())),
            Reply::Done {
                index: 3,
                ops: 4096,
                minflt: 4100,
            },
            Reply::Error {
                index: 0,
                what: "mmap: Cannot allocate memory".into(),
            },
        ] {
            assert_eq!(Reply::parse(&r.line()), Some(r.clone()), "{}", r.line());
        }
        let b = Batch {
            index: 1,
            max_ops: u64::MAX,
            deadline_ns: 123,
        };
        assert_eq!(Batch::parse(&b.line()), Some(b));
        assert_eq!(
            Reply::Ready(Err("two\nlines".into())).line(),
            "ready nomemcg two lines"
        );
        for bad in [
            "",
            "done 1 2",
            "done 1 2 3 4",
            "ready x",
            "batch 1 2",
            "hello 1",
        ] {
            assert!(
                Reply::parse(bad).is_none() && Batch::parse(bad).is_none(),
                "{bad}"
            );
        }
    }
}
