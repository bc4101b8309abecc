//! Reading the files the commands are given, never more than a limit
//! (`--max-input`, [`DEFAULT_LIMIT`] unless raised): `/dev/zero`, a FIFO
//! that never ends or a runaway file gets a one-line error instead of
//! filling memory. Inputs are read as they are parsed, never whole.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// The default input limit: 2 GiB, eight times the JSON profile of the
/// agent's largest default arena (64 MiB: about 190 MB of JSON).
pub const DEFAULT_LIMIT: u64 = 2 << 30;

/// The longest line of sampled stacks (a stack of 100,000 frames takes
/// about 3 MB).
pub const MAX_LINE: u64 = 64 << 20;

/// `2g`, `512m`, `64k` or a number of bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let (digits, unit) = match lower.char_indices().last() {
        Some((at, 'k')) => (&lower[..at], 1 << 10),
        Some((at, 'm')) => (&lower[..at], 1 << 20),
        Some((at, 'g')) => (&lower[..at], 1 << 30),
        _ => (lower.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|count| count.checked_mul(unit))
        .filter(|&bytes| bytes > 0)
        .ok_or_else(|| format!("--max-input must be a size such as 2g, 512m or 4096, not `{text}`"))
}

/// `bytes` for people: `2 GiB`, `512 MiB`, `100 bytes`.
pub fn show_size(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        // A whole number of the unit: its low `shift` bits are zero.
        if bytes >= 1 << shift && bytes.trailing_zeros() >= shift {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

fn over_limit(limit: u64) -> io::Error {
    io::Error::other(format!("it is larger than the input limit of {} (--max-input raises it)", show_size(limit)))
}

/// A reader that fails once more than `limit` bytes come out of `inner`.
pub struct Limited<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // One byte more than the limit is too much.
            return match self.inner.read(&mut [0u8; 1])? {
                0 => Ok(0),
                _ => Err(over_limit(self.limit)),
            };
        }
        let most = buffer.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buffer[..most])?;
        self.left -= read as u64;
        Ok(read)
    }
}

/// Opens `path` to be read through a buffer, at most `limit` bytes; a
/// regular file already larger is refused before anything is read.
pub fn open(path: &Path, limit: u64) -> io::Result<BufReader<Limited<File>>> {
    let file = File::open(path)?;
    let metadata = file.metadata()?;
    if metadata.is_file() && metadata.len() > limit {
        return Err(over_limit(limit));
    }
    Ok(BufReader::with_capacity(1 << 16, Limited { inner: file, left: limit, limit }))
}

/// Calls `each(number, line)` for every line of `reader` (1-based, without
/// its line end). A line longer than [`MAX_LINE`] or not UTF-8 is an error,
/// as is an error of `each`.
pub fn for_each_line(
    reader: &mut impl BufRead,
    mut each: impl FnMut(usize, &str) -> Result<(), String>,
) -> Result<(), String> {
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = reader.by_ref().take(MAX_LINE + 1).read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
        if read == 0 {
            return Ok(());
        }
        if line.len() as u64 > MAX_LINE {
            return Err(format!("line {number} is longer than {}", show_size(MAX_LINE)));
        }
        let text = std::str::from_utf8(&line).map_err(|_| format!("line {number} is not UTF-8"))?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        each(number, text.strip_suffix('\r').unwrap_or(text))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units_and_show_back() {
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        for bad in ["", "0", "g", "-1m", "1.5g", "99999999999g"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(show_size(DEFAULT_LIMIT), "2 GiB");
        assert_eq!(show_size(MAX_LINE), "64 MiB");
        assert_eq!(show_size(1000), "1000 bytes");
    }

    #[test]
    fn reading_stops_one_byte_past_the_limit() {
        let read = |input: &[u8], limit: u64| {
            let mut out = Vec::new();
            Limited { inner: input, left: limit, limit }.read_to_end(&mut out).map(|_| out)
        };
        assert_eq!(read(b"12345", 5).unwrap(), b"12345");
        let error = read(b"123456", 5).unwrap_err().to_string();
        assert_eq!(error, "it is larger than the input limit of 5 bytes (--max-input raises it)");
        // An endless input ends too.
        let endless = io::repeat(0).take(u64::MAX);
        assert!(Limited { inner: endless, left: 1 << 20, limit: 1 << 20 }.read_to_end(&mut Vec::new()).is_err());
    }

    #[test]
    fn lines_come_without_their_ends_and_bad_ones_are_named() {
        let mut seen = Vec::new();
        let mut input: &[u8] = b"a\r\nb\n\nc";
        for_each_line(&mut input, |number, line| {
            seen.push((number, line.to_string()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(1, "a".into()), (2, "b".into()), (3, "".into()), (4, "c".into())]);
        let mut bad: &[u8] = b"ok\n\xff\n";
        assert_eq!(for_each_line(&mut bad, |_, _| Ok(())), Err("line 2 is not UTF-8".to_string()));
        let mut zeros = BufReader::new(io::repeat(0).take(MAX_LINE + 10));
        assert_eq!(for_each_line(&mut zeros, |_, _| Ok(())), Err("line 1 is longer than 64 MiB".to_string()));
    }
}
