//! SHA-256 of a file, printed next to the image so a user can check what they write to a stick.

use crate::BootError;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// The lower-case hex SHA-256 of the file at `path`, streamed in 64 KiB chunks.
pub fn file_hex(path: &Path) -> Result<String, BootError> {
    let mut f = std::fs::File::open(path).map_err(|e| BootError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf).map_err(|e| BootError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Lower-case hex of `bytes`.
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digest() {
        let dir = std::env::temp_dir().join(format!("kx-sha-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("abc");
        std::fs::write(&f, b"abc").unwrap();
        assert_eq!(
            file_hex(&f).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(file_hex(&f), Err(BootError::Io { .. })));
    }
}
