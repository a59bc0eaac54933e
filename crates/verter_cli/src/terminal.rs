//! Everything the CLI prints for a person goes through here, one line per
//! call, with every character a terminal would act on rendered as a
//! visible escape ([`Escaped`]).
//!
//! A tree's names reach the CLI's messages: file and directory names, a
//! `#[path]` string, a `mod` declaration, a parse error quoting the file.
//! Written raw, a name holding `\x1b]0;…\x07` retitles the terminal,
//! `\x1b[2K\r` erases the line it is on, `\n` starts a forged
//! `warning: …` line, and a bidi override (`\u{202e}`) shows its text
//! reversed. So no module prints with `println!` or `eprintln!` (a test
//! scans the sources): each message is handed whole to [`say`] or [`tell`]
//! (or [`line()`]), which escape it as they write it. A message that spans
//! lines is built from one-line pieces and printed a line at a time, never
//! split from a string a name could have put a newline in.
//!
//! Writing never panics: standard output closed early (`verter build |
//! head -1`) or full (`> /dev/full`) loses the line, not the build.

use std::fmt::{self, Write as _};
use std::io::{IsTerminal as _, Write as _};

/// `T` as shown to a person: its text, with every control character
/// (C0, DEL, C1: `\x1b`, `\r`, `\n`, `\t`, …) and every character that
/// reorders or hides text (bidi embeddings, overrides, isolates and marks,
/// the line and paragraph separators) written as a visible escape: `\x1b`
/// for one below U+0100, `\u{202e}` above.
///
/// A backslash is shown as it is: a name that spells `\x1b` reads the same
/// as one that holds the character, and neither acts on the terminal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Escaped<T>(pub(crate) T);

impl<T: fmt::Display> fmt::Display for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(EscapingWriter(f), "{}", self.0)
    }
}

/// Whether `c` is shown as an escape rather than written.
pub(crate) fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'                       // Arabic letter mark
            | '\u{200e}' | '\u{200f}'        // left-to-right and right-to-left marks
            | '\u{202a}'..='\u{202e}'        // embeddings, pop, overrides
            | '\u{2066}'..='\u{2069}'        // isolates
            | '\u{2028}' | '\u{2029}' // line and paragraph separators
        )
}

/// Forwards text to a formatter, escaping what [`needs_escape`] says.
struct EscapingWriter<'a, 'b>(&'a mut fmt::Formatter<'b>);

impl fmt::Write for EscapingWriter<'_, '_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let mut rest = text;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| needs_escape(c)) {
            self.0.write_str(&rest[..at])?;
            if u32::from(c) < 0x100 {
                write!(self.0, "\\x{:02x}", u32::from(c))?;
            } else {
                write!(self.0, "\\u{{{:x}}}", u32::from(c))?;
            }
            rest = &rest[at + c.len_utf8()..];
        }
        self.0.write_str(rest)
    }
}

/// Where a line goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Standard output: summaries and change lines.
    Out,
    /// Standard error: warnings, errors, progress; and everything a person
    /// reads when standard output carries the index (`--out -`).
    Err,
}

/// Writes `message`, escaped, and a newline to `stream`. A write that
/// fails (the stream closed or full) is dropped.
pub(crate) fn line(stream: Stream, message: impl fmt::Display) {
    let text = format!("{}\n", Escaped(message));
    let _ = match stream {
        Stream::Out => std::io::stdout().lock().write_all(text.as_bytes()),
        Stream::Err => std::io::stderr().lock().write_all(text.as_bytes()),
    };
}

/// [`line()`] to standard output.
pub(crate) fn say(message: impl fmt::Display) {
    line(Stream::Out, message);
}

/// [`line()`] to standard error.
pub(crate) fn tell(message: impl fmt::Display) {
    line(Stream::Err, message);
}

/// Whether standard error is a terminal (a progress bar is drawn there).
pub(crate) fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// Standard output for data a program reads, not a person: the index with
/// `--out -`. Written as given, never escaped (JSON escapes its own).
pub(crate) fn data_out() -> std::io::StdoutLock<'static> {
    std::io::stdout().lock()
}

/// Prints clap's `error` (a usage error, or `--help` and `--version`) and
/// exits as clap does: usage errors with code 2. A usage error echoes the
/// arguments it could not take, and one may be a name from a tree: when an
/// argument holds a character [`Escaped`] escapes, the command line is
/// parsed again with every argument escaped, and that error (the same
/// mistake, showing the escapes) is the one printed. (Rendering the first
/// error and escaping it would not do: clap's plain rendering drops escape
/// sequences from the echoed argument but keeps its newlines.)
pub(crate) fn exit_with<P: clap::Parser>(error: &clap::Error) -> ! {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let hostile = |arg: &std::ffi::OsString| arg.to_string_lossy().contains(needs_escape);
    if !error.use_stderr() || !args.iter().any(hostile) {
        error.exit();
    }
    let escaped = args.iter().map(|arg| {
        if hostile(arg) {
            Escaped(arg.to_string_lossy()).to_string().into()
        } else {
            arg.clone()
        }
    });
    match P::try_parse_from(escaped) {
        Err(shown) if shown.use_stderr() => shown.exit(),
        // Escaped arguments that parse: not expected (an escape is not a
        // number, a `--progress` mode or a flag); say what is known.
        _ => {
            tell("error: the command line is wrong (`verter --help` says how it is used)");
            std::process::exit(error.exit_code());
        }
    }
}

#[cfg(test)]
mod tests;
