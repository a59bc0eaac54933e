//! The fake server's default runner: a tiny interpreter of a handful of
//! commands over the input files. Not a shell and not a process: nothing
//! here touches the machine.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;

use super::{Command, FakeRun};

/// Interprets `command` over `inputs` (paths relative to the input root;
/// the command's paths are relative to its working directory):
///
/// | arguments | effect |
/// | --- | --- |
/// | `echo WORD...` | stdout: the words joined by spaces, and a newline |
/// | `cat PATH...` | stdout: the inputs' contents, concatenated |
/// | `concat OUT IN...` | output `OUT`: the inputs concatenated |
/// | `write OUT TEXT` | output `OUT`: `TEXT` |
/// | `fill OUT N` | output `OUT`: `N` bytes of `x` |
/// | `env NAME` | stdout: the variable's value and a newline |
/// | `sleep-ms N` | takes `N` ms on the server |
/// | `fail CODE WORD...` | exit code `CODE`, stderr: the words |
///
/// A missing input or variable exits with 1, an unknown command with 127,
/// each with a message on stderr.
pub fn interpret(command: &Command, inputs: &BTreeMap<String, Bytes>) -> FakeRun {
    let args: Vec<&str> = command.arguments.iter().map(String::as_str).collect();
    let read = |path: &str| -> Result<Bytes, FakeRun> {
        let full = if command.working_directory.is_empty() {
            path.to_owned()
        } else {
            format!("{}/{path}", command.working_directory)
        };
        inputs
            .get(&full)
            .cloned()
            .ok_or_else(|| failure(1, &format!("{}: {path}: no such input", args[0])))
    };
    let run = || -> Result<FakeRun, FakeRun> {
        match args.as_slice() {
            ["echo", words @ ..] => Ok(FakeRun {
                stdout: Bytes::from(format!("{}\n", words.join(" "))),
                ..FakeRun::default()
            }),
            ["cat", paths @ ..] => Ok(FakeRun {
                stdout: concatenated(paths, read)?,
                ..FakeRun::default()
            }),
            ["concat", out, paths @ ..] => Ok(output(out, concatenated(paths, read)?)),
            ["write", out, text] => Ok(output(out, Bytes::from((*text).to_owned()))),
            ["fill", out, size] => {
                let size: usize = size.parse().map_err(|_| failure(2, "fill: bad size"))?;
                Ok(output(out, Bytes::from(vec![b'x'; size])))
            }
            ["env", name] => command
                .environment_variables
                .iter()
                .find(|variable| variable.name == *name)
                .map(|variable| FakeRun {
                    stdout: Bytes::from(format!("{}\n", variable.value)),
                    ..FakeRun::default()
                })
                .ok_or_else(|| failure(1, &format!("env: {name} is not set"))),
            ["sleep-ms", millis] => {
                let millis: u64 = millis
                    .parse()
                    .map_err(|_| failure(2, "sleep-ms: bad duration"))?;
                Ok(FakeRun {
                    delay: Duration::from_millis(millis),
                    ..FakeRun::default()
                })
            }
            ["fail", code, words @ ..] => {
                let code: i32 = code.parse().map_err(|_| failure(2, "fail: bad code"))?;
                Ok(failure(code, &words.join(" ")))
            }
            [program, ..] => Err(failure(127, &format!("fake: unknown command {program}"))),
            [] => Err(failure(127, "fake: empty command")),
        }
    };
    run().unwrap_or_else(|failed| failed)
}

fn concatenated(
    paths: &[&str],
    read: impl Fn(&str) -> Result<Bytes, FakeRun>,
) -> Result<Bytes, FakeRun> {
    let mut all = Vec::new();
    for path in paths {
        all.extend_from_slice(&read(path)?);
    }
    Ok(Bytes::from(all))
}

fn output(path: &str, contents: Bytes) -> FakeRun {
    FakeRun {
        outputs: BTreeMap::from([(path.to_owned(), contents)]),
        ..FakeRun::default()
    }
}

fn failure(exit_code: i32, message: &str) -> FakeRun {
    FakeRun {
        exit_code,
        stderr: Bytes::from(format!("{message}\n")),
        ..FakeRun::default()
    }
}
