//! The SOSD benchmark's binary key files (Marcus et al., "Benchmarking Learned Indexes",
//! PVLDB 2020): an 8-byte little-endian key count followed by that many sorted keys, each a
//! little-endian `u32` or `u64`. The width is not stored in the file: it is the suffix of the
//! file name, as in `books_200M_uint32` or `osm_cellids_800M_uint64`.
//!
//! Files are checked before anything large is allocated: the length must be exactly
//! `8 + count · width` bytes, so a truncated file, a file of the other width or a foreign file
//! is an error, whatever its header claims.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// The key width of a SOSD file, given by its name's suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Width {
    /// `_uint32`: 4-byte keys.
    U32,
    /// `_uint64`: 8-byte keys.
    U64,
}

impl Width {
    /// The width named by a file name's suffix; [`Error::SosdName`] if it has neither.
    ///
    /// ```
    /// use workload::dataset::sosd::Width;
    /// assert_eq!(Width::from_path("data/books_200M_uint32".as_ref())?, Width::U32);
    /// assert!(Width::from_path("data/books.bin".as_ref()).is_err());
    /// # Ok::<(), workload::Error>(())
    /// ```
    pub fn from_path(path: &Path) -> Result<Self> {
        let name = path.file_name().map(|name| name.to_string_lossy());
        match name.as_deref() {
            Some(name) if name.ends_with("_uint32") => Ok(Self::U32),
            Some(name) if name.ends_with("_uint64") => Ok(Self::U64),
            _ => Err(Error::SosdName {
                path: path.to_owned(),
            }),
        }
    }

    /// Bytes per key.
    pub fn bytes(self) -> u64 {
        match self {
            Self::U32 => 4,
            Self::U64 => 8,
        }
    }

    /// The file name suffix, `_uint32` or `_uint64`.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::U32 => "_uint32",
            Self::U64 => "_uint64",
        }
    }
}

/// Bytes read from or written to the file per system call.
const CHUNK: usize = 1 << 20;

/// Reads a SOSD file's keys, widened to `u64`, in file order (sorted; duplicates are kept).
///
/// Errors: a name without a width suffix, a file shorter than its header or whose length does
/// not match its count, keys out of order, and I/O failures. Nothing is allocated for the keys
/// before the length has been checked.
pub fn read(path: &Path) -> Result<Vec<u64>> {
    let width = Width::from_path(path)?;
    let io = |source| Error::io(path, source);
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len < 8 {
        return Err(Error::SosdHeader {
            path: path.to_owned(),
            len,
        });
    }
    let mut reader = BufReader::with_capacity(CHUNK, file);
    let mut header = [0; 8];
    reader.read_exact(&mut header).map_err(io)?;
    let count = u64::from_le_bytes(header);
    let length_error = || Error::SosdLength {
        path: path.to_owned(),
        count,
        width: width.bytes(),
        len,
    };
    let expected = count
        .checked_mul(width.bytes())
        .and_then(|body| body.checked_add(8));
    if expected != Some(len) {
        return Err(length_error());
    }
    let count = usize::try_from(count).map_err(|_| length_error())?;
    let mut keys = Vec::with_capacity(count);
    let mut buffer = vec![0; CHUNK];
    let key_bytes = width.bytes() as usize;
    while keys.len() < count {
        let want = ((count - keys.len()) * key_bytes).min(CHUNK);
        let chunk = &mut buffer[..want];
        // A file that shrinks while being read ends here as an I/O error (unexpected EOF).
        reader.read_exact(chunk).map_err(io)?;
        match width {
            Width::U32 => keys.extend(chunk.chunks_exact(4).map(|b| {
                u64::from(u32::from_le_bytes(
                    b.try_into().expect("chunks_exact(4) yields 4 bytes"),
                ))
            })),
            Width::U64 => keys.extend(chunk.chunks_exact(8).map(|b| {
                u64::from_le_bytes(b.try_into().expect("chunks_exact(8) yields 8 bytes"))
            })),
        }
    }
    if let Some(position) = first_unsorted(&keys) {
        return Err(Error::Unsorted {
            source_name: path.display().to_string(),
            position,
        });
    }
    Ok(keys)
}

/// Writes `keys` (sorted; duplicates allowed) as a SOSD file whose width is given by the file
/// name. Keys over `u32::MAX` in a `_uint32` file and unsorted keys are errors, checked before
/// the file is created.
///
/// ```
/// use workload::dataset::sosd;
/// let path = std::env::temp_dir().join(format!("sosd-doc-{}_uint64", std::process::id()));
/// sosd::write(&path, &[1, 5, 9])?;
/// assert_eq!(sosd::read(&path)?, [1, 5, 9]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), workload::Error>(())
/// ```
pub fn write(path: &Path, keys: &[u64]) -> Result<()> {
    let width = Width::from_path(path)?;
    if let Some(position) = first_unsorted(keys) {
        return Err(Error::Unsorted {
            source_name: "keys to write".to_owned(),
            position,
        });
    }
    if width == Width::U32
        && let Some((position, &key)) = keys
            .iter()
            .enumerate()
            .find(|&(_, &k)| k > u64::from(u32::MAX))
    {
        return Err(Error::KeyTooWide { key, position });
    }
    let io = |source| Error::io(path, source);
    let mut writer = BufWriter::with_capacity(CHUNK, File::create(path).map_err(io)?);
    writer
        .write_all(&(keys.len() as u64).to_le_bytes())
        .map_err(io)?;
    for &key in keys {
        match width {
            Width::U32 => {
                let key = u32::try_from(key).expect("keys were checked to fit in 32 bits");
                writer.write_all(&key.to_le_bytes())
            }
            Width::U64 => writer.write_all(&key.to_le_bytes()),
        }
        .map_err(io)?;
    }
    writer
        .into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)
}

/// The first position whose key is smaller than the one before it.
fn first_unsorted(keys: &[u64]) -> Option<usize> {
    keys.windows(2).position(|w| w[0] > w[1]).map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A path in the temporary directory, unique to this process and test.
    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("workload-sosd-{}-{name}", std::process::id()))
    }

    #[test]
    fn round_trips_both_widths() {
        let keys: Vec<u64> = (0..100_000u64).map(|i| i * 37 + i % 3).collect();
        for name in ["round_uint32", "round_uint64"] {
            let path = temp(name);
            write(&path, &keys).expect("writable");
            let len = std::fs::metadata(&path).expect("written").len();
            assert_eq!(
                len,
                8 + keys.len() as u64 * Width::from_path(&path).expect("named").bytes()
            );
            assert_eq!(read(&path).expect("readable"), keys);
            std::fs::remove_file(&path).expect("removable");
        }
        let wide = [1, u64::MAX - 1, u64::MAX];
        let path = temp("wide_uint64");
        write(&path, &wide).expect("writable");
        assert_eq!(read(&path).expect("readable"), wide);
        std::fs::remove_file(&path).expect("removable");
    }

    #[test]
    fn names_without_a_width_are_rejected() {
        for name in ["books", "books_uint16", "books_uint64.zst", ""] {
            assert!(
                matches!(read(&temp(name)), Err(Error::SosdName { .. })),
                "{name}"
            );
        }
        assert!(matches!(
            write(&temp("x.bin"), &[1]),
            Err(Error::SosdName { .. })
        ));
    }

    #[test]
    fn truncated_padded_and_foreign_files_are_rejected() {
        let path = temp("bad_uint64");
        let mut good = 3u64.to_le_bytes().to_vec();
        for key in [1u64, 2, 3] {
            good.extend(key.to_le_bytes());
        }
        let cases: [(&[u8], &str); 6] = [
            (&[], "empty"),
            (&good[..5], "cut header"),
            (&good[..good.len() - 1], "truncated"),
            (&[good.as_slice(), &[0]].concat(), "padded"),
            (&u64::MAX.to_le_bytes(), "absurd count"),
            (
                &[&(1u64 << 61).to_le_bytes()[..], &[0; 16]].concat(),
                "count overflowing the length",
            ),
        ];
        for (bytes, what) in cases {
            std::fs::write(&path, bytes).expect("writable");
            let error = read(&path).expect_err(what);
            assert!(
                matches!(error, Error::SosdHeader { .. } | Error::SosdLength { .. }),
                "{what}: {error}"
            );
        }
        std::fs::write(&path, &good).expect("writable");
        assert_eq!(read(&path).expect("valid"), [1, 2, 3]);
        std::fs::remove_file(&path).expect("removable");
    }

    #[test]
    fn wrong_width_is_a_length_error() {
        let path = temp("narrow_uint32");
        write(&path, &[1, 2, 3]).expect("writable");
        let renamed = temp("narrow_uint64");
        std::fs::rename(&path, &renamed).expect("renamable");
        assert!(matches!(
            read(&renamed),
            Err(Error::SosdLength {
                count: 3,
                width: 8,
                len: 20,
                ..
            })
        ));
        std::fs::remove_file(&renamed).expect("removable");
    }

    #[test]
    fn unsorted_and_too_wide_keys_are_rejected() {
        assert!(matches!(
            write(&temp("u_uint64"), &[3, 1]),
            Err(Error::Unsorted { position: 1, .. })
        ));
        let too_wide = [1, 1 << 40];
        assert!(matches!(
            write(&temp("w_uint32"), &too_wide),
            Err(Error::KeyTooWide { position: 1, .. })
        ));
        let path = temp("unsorted_uint32");
        let mut bytes = 2u64.to_le_bytes().to_vec();
        bytes.extend(5u32.to_le_bytes());
        bytes.extend(4u32.to_le_bytes());
        std::fs::write(&path, bytes).expect("writable");
        assert!(matches!(
            read(&path),
            Err(Error::Unsorted { position: 1, .. })
        ));
        std::fs::remove_file(&path).expect("removable");
    }

    #[test]
    fn missing_file_is_an_io_error() {
        assert!(matches!(
            read(&temp("missing_uint64")),
            Err(Error::Io { .. })
        ));
    }
}
