//! The initramfs: a `newc` cpio archive (the format Linux's `init/initramfs.c` unpacks),
//! written here and read back by [`parse`] (the tests' round trip, and a check of what was
//! written before it is booted).
//!
//! Each entry is a 110-byte ASCII header (`070701`, then thirteen 8-digit hex fields: inode,
//! mode, uid, gid, nlink, mtime, file size, device major/minor, rdev major/minor, name size
//! with its NUL, checksum 0), the name and its NUL padded to 4 bytes, the data padded to 4
//! bytes; the archive ends with the entry `TRAILER!!!`. Owners are root, times 0.

use std::fmt;

/// The magic of a `newc` header.
const MAGIC: &[u8; 6] = b"070701";
/// Header length.
const HEADER: usize = 110;
/// The name of the last entry.
const TRAILER: &str = "TRAILER!!!";

const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFCHR: u32 = 0o020_000;
const S_IFMT: u32 = 0o170_000;

/// What an entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file with its contents.
    File(Vec<u8>),
    /// A character device (`major`, `minor`), e.g. `/dev/console` (5, 1).
    CharDev(u32, u32),
}

/// One entry: a path without a leading `/`, its permission bits and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `init`, `dev/console`, ...
    pub name: String,
    /// Permission bits (`0o755`); the type bits come from `kind`.
    pub perm: u32,
    /// What it is.
    pub kind: Kind,
}

impl Entry {
    /// A directory.
    #[must_use]
    pub fn dir(name: &str, perm: u32) -> Entry {
        Entry {
            name: name.into(),
            perm,
            kind: Kind::Dir,
        }
    }

    /// A regular file.
    #[must_use]
    pub fn file(name: &str, perm: u32, data: Vec<u8>) -> Entry {
        Entry {
            name: name.into(),
            perm,
            kind: Kind::File(data),
        }
    }

    /// A character device.
    #[must_use]
    pub fn char_dev(name: &str, perm: u32, major: u32, minor: u32) -> Entry {
        Entry {
            name: name.into(),
            perm,
            kind: Kind::CharDev(major, minor),
        }
    }

    fn mode(&self) -> u32 {
        let ty = match self.kind {
            Kind::Dir => S_IFDIR,
            Kind::File(_) => S_IFREG,
            Kind::CharDev(..) => S_IFCHR,
        };
        ty | (self.perm & 0o7777)
    }
}

fn pad4(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(4), 0);
}

fn header(out: &mut Vec<u8>, ino: u32, mode: u32, size: u32, rdev: (u32, u32), name: &str) {
    let nlink = if mode & S_IFMT == S_IFDIR { 2 } else { 1 };
    let name_size = name.len() as u32 + 1;
    out.extend_from_slice(MAGIC);
    for field in [
        ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev.0, rdev.1, name_size, 0,
    ] {
        out.extend_from_slice(format!("{field:08x}").as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad4(out);
}

/// The archive of `entries`, in order (a directory must come before what is in it).
///
/// # Panics
/// On a file of 4 GiB or more or an empty name (the format cannot hold the one, Linux
/// would not unpack the other); kx only writes its own small entries.
#[must_use]
pub fn write(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        assert!(!e.name.is_empty(), "a cpio entry needs a name");
        let (size, rdev, data): (u32, (u32, u32), &[u8]) = match &e.kind {
            Kind::Dir => (0, (0, 0), &[]),
            Kind::File(d) => (
                u32::try_from(d.len()).expect("a file under 4 GiB"),
                (0, 0),
                d,
            ),
            Kind::CharDev(ma, mi) => (0, (*ma, *mi), &[]),
        };
        header(&mut out, i as u32 + 1, e.mode(), size, rdev, &e.name);
        out.extend_from_slice(data);
        pad4(&mut out);
    }
    header(&mut out, 0, 0, 0, (0, 0), TRAILER);
    out
}

/// Why an archive does not read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpioError {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What is wrong there.
    pub what: &'static str,
}

impl fmt::Display for CpioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cpio: {} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for CpioError {}

/// The entries of a `newc` archive (up to its trailer).
pub fn parse(bytes: &[u8]) -> Result<Vec<Entry>, CpioError> {
    let mut entries = Vec::new();
    let mut at = 0;
    loop {
        let err = |what| CpioError { offset: at, what };
        let h = bytes.get(at..at + HEADER).ok_or(err("truncated header"))?;
        if &h[..6] != MAGIC {
            return Err(err("not a newc header"));
        }
        let field = |i: usize| -> Result<u32, CpioError> {
            let s = std::str::from_utf8(&h[6 + 8 * i..14 + 8 * i])
                .map_err(|_| err("a header field is not ASCII"))?;
            u32::from_str_radix(s, 16).map_err(|_| err("a header field is not hex"))
        };
        let (mode, size, rmajor, rminor, name_size) =
            (field(1)?, field(6)?, field(9)?, field(10)?, field(11)?);
        let name_end = at + HEADER + name_size as usize;
        let name = bytes
            .get(at + HEADER..name_end)
            .ok_or(err("truncated name"))?;
        let name = name
            .strip_suffix(&[0])
            .and_then(|n| std::str::from_utf8(n).ok())
            .ok_or(err("a name without its NUL"))?
            .to_owned();
        let data_start = name_end.next_multiple_of(4);
        let data_end = data_start + size as usize;
        let data = bytes
            .get(data_start..data_end)
            .ok_or(err("truncated data"))?;
        if name == TRAILER {
            return Ok(entries);
        }
        let kind = match mode & S_IFMT {
            S_IFDIR => Kind::Dir,
            S_IFREG => Kind::File(data.to_vec()),
            S_IFCHR => Kind::CharDev(rmajor, rminor),
            _ => return Err(err("an entry type kx does not write")),
        };
        entries.push(Entry {
            name,
            perm: mode & 0o7777,
            kind,
        });
        at = data_end.next_multiple_of(4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Entry> {
        vec![
            Entry::dir("dev", 0o755),
            Entry::char_dev("dev/console", 0o600, 5, 1),
            Entry::file("init", 0o755, b"\x7fELF and some bytes".to_vec()),
            Entry::file("kx.conf", 0o644, b"cpus=1,2\n".to_vec()),
            Entry::file("empty", 0o644, Vec::new()),
        ]
    }

    #[test]
    fn round_trip() {
        let bytes = write(&sample());
        assert!(bytes.len().is_multiple_of(4));
        assert_eq!(parse(&bytes).unwrap(), sample());
    }

    #[test]
    fn header_layout_is_newc() {
        let bytes = write(&[Entry::file("a", 0o644, b"xyz".to_vec())]);
        // Magic, inode 1, mode 0100644, uid, gid, nlink 1, mtime, size 3, ...
        let h = std::str::from_utf8(&bytes[..HEADER]).unwrap();
        let fields = [
            "00000001", "000081a4", "00000000", "00000000", "00000001", "00000000", "00000003",
            "00000000", "00000000", "00000000", "00000000", "00000002", "00000000",
        ];
        assert_eq!(h, format!("070701{}", fields.concat()));
        // Name "a\0" ends at 112, already 4-aligned; data at 112, padded to 116.
        assert_eq!(&bytes[110..112], b"a\0");
        assert_eq!(&bytes[112..116], b"xyz\0");
        assert_eq!(&bytes[116..122], MAGIC);
        assert!(
            std::str::from_utf8(&bytes[116 + HEADER..])
                .unwrap()
                .starts_with("TRAILER!!!\0")
        );
    }

    #[test]
    fn damaged_archives_are_errors() {
        let bytes = write(&sample());
        assert_eq!(parse(&bytes[..50]).unwrap_err().what, "truncated header");
        let mut bad = bytes.clone();
        bad[0] = b'1';
        assert_eq!(parse(&bad).unwrap_err().what, "not a newc header");
        // Cut inside the init file's data.
        let cut = bytes.len() - 200;
        assert!(parse(&bytes[..cut]).is_err());
    }
}
