//! Names as text: the JVM's bytes decoded without loss, and names escaped
//! for the line-oriented reports.
//!
//! **Decoding.** JVMTI hands names over in Java's *modified UTF-8* (JVMS
//! 4.4.7): U+0000 is written `C0 80`, a character above U+FFFF as two
//! three-byte surrogates, and no byte is `00` or `F0`..`FF`.
//! [`from_modified_utf8`] decodes it with the `cesu8` crate (what the `jni`
//! crate uses). A name that is not valid modified UTF-8 (a class file that
//! skipped verification can hold one) is not decoded lossily, which would
//! make two methods one: every byte that does not start a valid character
//! becomes `\xNN` (two uppercase hex digits) and every backslash `\\`. A
//! valid name that contains `\x` or `\\` has its backslashes doubled too, so
//! no valid name reads like an escaped one: two different byte strings are
//! always two different names.
//!
//! **Escaping.** Class files allow any character in a name, control
//! characters included, so the text reports write names through
//! [`escape`]: a control character (`\n`, `\r`, `\t`, `\x01`, DEL, the C1
//! controls) and the format's own separators (`;` in collapsed stacks)
//! become `\xNN` (the character's code), a backslash becomes `\\`, and
//! nothing else changes; [`unescape`] reverses it. JSON needs none of it:
//! its strings carry any text.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The text of JVM `bytes` in modified UTF-8 (see the module docs); never
/// fails, never loses a byte.
pub fn from_modified_utf8(bytes: &[u8]) -> Cow<'_, str> {
    match decode_valid(bytes) {
        Some(text) if text.contains("\\x") || text.contains("\\\\") => Cow::Owned(text.replace('\\', "\\\\")),
        Some(text) => text,
        None => Cow::Owned(escape_invalid(bytes)),
    }
}

/// The text of `bytes` when all of them are valid modified UTF-8.
fn decode_valid(bytes: &[u8]) -> Option<Cow<'_, str>> {
    // `cesu8` takes plain UTF-8 as it is, so it also accepts UTF-8's
    // four-byte form of a supplementary character and a raw NUL, which
    // modified UTF-8 forbids: accepting them would give two byte strings
    // (`F0 9D 94 98` and its surrogate pair) one text.
    if bytes.iter().any(|&byte| byte == 0 || byte >= 0xF0) {
        return None;
    }
    cesu8::from_java_cesu8(bytes).ok()
}

/// Bytes of the modified UTF-8 sequence `first` starts (6 for a surrogate
/// pair); 1 for a byte that starts none (checked by the decoder).
fn sequence_length(first: u8, second: Option<u8>) -> usize {
    match first {
        0xC0..=0xDF => 2,
        0xED if second.is_some_and(|second| (0xA0..=0xAF).contains(&second)) => 6,
        0xE0..=0xEF => 3,
        _ => 1,
    }
}

/// Valid characters as they are (a backslash doubled), every other byte as `\xNN`.
fn escape_invalid(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    let mut rest = bytes;
    while let Some(&first) = rest.first() {
        let length = sequence_length(first, rest.get(1).copied()).min(rest.len());
        match decode_valid(&rest[..length]) {
            Some(text) => {
                push_escaped_backslashes(&mut out, &text);
                rest = &rest[length..];
            }
            None => {
                let _ = write!(out, "\\x{first:02X}");
                rest = &rest[1..];
            }
        }
    }
    out
}

fn push_escaped_backslashes(out: &mut String, text: &str) {
    for character in text.chars() {
        if character == '\\' {
            out.push('\\');
        }
        out.push(character);
    }
}

fn needs_escape(character: char, separators: &[char]) -> bool {
    character.is_control() || character == '\\' || separators.contains(&character)
}

/// `text` with its control characters and `separators` (ASCII characters)
/// written `\xNN` and its backslashes `\\`; borrowed when nothing changes.
pub fn escape<'a>(text: &'a str, separators: &[char]) -> Cow<'a, str> {
    debug_assert!(separators.iter().all(char::is_ascii), "two hex digits hold ASCII separators");
    if !text.chars().any(|character| needs_escape(character, separators)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        if character == '\\' {
            out.push_str("\\\\");
        } else if needs_escape(character, separators) {
            let _ = write!(out, "\\x{:02X}", u32::from(character));
        } else {
            out.push(character);
        }
    }
    Cow::Owned(out)
}

/// [`escape`] of an owned name, without a copy when nothing changes.
pub fn escape_owned(text: String, separators: &[char]) -> String {
    if text.chars().any(|character| needs_escape(character, separators)) {
        escape(&text, separators).into_owned()
    } else {
        text
    }
}

/// The name [`escape`] wrote as `text`; `None` when a backslash starts
/// neither `\\` nor `\xNN`.
pub fn unescape(text: &str) -> Option<Cow<'_, str>> {
    if !text.contains('\\') {
        return Some(Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let escape = &rest[at..];
        if let Some(after) = escape.strip_prefix("\\\\") {
            out.push('\\');
            rest = after;
        } else {
            let hex = escape.strip_prefix("\\x").and_then(|hex| hex.get(..2))?;
            if !hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
                return None;
            }
            out.push(char::from(u8::from_str_radix(hex, 16).ok()?));
            rest = &escape[4..];
        }
    }
    out.push_str(rest);
    Some(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn modified_utf8_decodes_nul_and_supplementary_characters() {
        assert_eq!(from_modified_utf8(b"java.util.HashMap"), "java.util.HashMap");
        assert!(matches!(from_modified_utf8(b"plain"), Cow::Borrowed(_)));
        assert_eq!(from_modified_utf8(&[b'a', 0xC0, 0x80, b'b']), "a\0b");
        // U+1D518 (a letter javac accepts in identifiers) as Java writes it.
        assert_eq!(from_modified_utf8(&[0xED, 0xA0, 0xB5, 0xED, 0xB4, 0x98]), "\u{1D518}");
        assert_eq!(from_modified_utf8("é日\u{7}".as_bytes()), "é日\u{7}");
    }

    #[test]
    fn invalid_bytes_are_escaped_not_replaced() {
        // UTF-8's own form of U+1D518 is not modified UTF-8.
        assert_eq!(from_modified_utf8(&[0xF0, 0x9D, 0x94, 0x98]), "\\xF0\\x9D\\x94\\x98");
        assert_eq!(from_modified_utf8(&[b'a', 0xFF, b'\\', b'b']), "a\\xFF\\\\b");
        // A lone high surrogate, then a valid character.
        assert_eq!(from_modified_utf8(&[0xED, 0xA0, 0xB5, b'x']), "\\xED\\xA0\\xB5x");
        assert_eq!(from_modified_utf8(&[0xC0, 0x81, 0xC0, 0x80]), "\\xC0\\x81\0");
        // Lossy decoding made these one name.
        assert_ne!(from_modified_utf8(&[b'm', 0xFE]), from_modified_utf8(&[b'm', 0xFF]));
        assert_eq!(String::from_utf8_lossy(&[b'm', 0xFE]), String::from_utf8_lossy(&[b'm', 0xFF]));
    }

    #[test]
    fn valid_names_that_read_like_escapes_have_their_backslashes_doubled() {
        assert_eq!(from_modified_utf8(b"a\\xFF"), "a\\\\xFF");
        assert_ne!(from_modified_utf8(b"a\\xFF"), from_modified_utf8(&[b'a', 0xFF]));
        assert_eq!(from_modified_utf8(b"a\\b"), "a\\b", "a lone backslash stays");
    }

    /// Every byte string of up to four of these pieces: no two decode alike.
    #[test]
    fn distinct_byte_strings_never_decode_to_one_name() {
        let pieces: [&[u8]; 15] = [
            &[0x00],
            &[0x01],
            b"\\",
            b"x",
            b"C",
            b"0",
            &[0xC0],
            &[0x80],
            &[0xC0, 0x80],
            &[0xED, 0xA0, 0xB5],
            &[0xED, 0xB4, 0x98],
            &[0xF0, 0x9D, 0x94, 0x98],
            &[0xE6, 0x97, 0xA5],
            &[0xFF],
            b"\\x",
        ];
        let mut seen: HashMap<String, Vec<u8>> = HashMap::new();
        let mut strings: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> =
                strings.iter().flat_map(|s| pieces.iter().map(move |p| [s.as_slice(), p].concat())).collect();
            strings.extend(longer);
            strings.sort();
            strings.dedup();
        }
        for bytes in strings {
            let name = from_modified_utf8(&bytes).into_owned();
            if let Some(other) = seen.insert(name.clone(), bytes.clone()) {
                assert_eq!(other, bytes, "{other:02X?} and {bytes:02X?} both became {name:?}");
            }
        }
    }

    #[test]
    fn escaping_keeps_names_on_one_line_and_round_trips() {
        let name = "a\nb\rc\td;e\u{1}f\\g\u{7f}h\u{85}i";
        let escaped = escape(name, &[';']);
        assert_eq!(escaped, "a\\x0Ab\\x0Dc\\x09d\\x3Be\\x01f\\\\g\\x7Fh\\x85i");
        assert!(!escaped.contains(|c: char| c.is_control() || c == ';'));
        assert_eq!(unescape(&escaped).unwrap(), name);
        assert_eq!(escape(name, &[]), "a\\x0Ab\\x0Dc\\x09d;e\\x01f\\\\g\\x7Fh\\x85i");
        assert!(matches!(escape("java.util.HashMap.get", &[';']), Cow::Borrowed(_)));
        assert_eq!(escape_owned("x;y".to_string(), &[';']), "x\\x3By");
        assert_eq!(unescape("no escapes").unwrap(), "no escapes");
        for bad in ["a\\", "a\\q", "a\\x4", "a\\xZZ", "a\\x\u{e9}0"] {
            assert_eq!(unescape(bad), None, "{bad}");
        }
    }
}
