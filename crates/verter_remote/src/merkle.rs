//! Builds an action's REAPI messages from an [`ActionSpec`]: the input root
//! as a Merkle tree of `Directory` messages, the `Command` and the `Action`,
//! each with its digest, and every blob the server needs. Pure computation;
//! never performs I/O.
//!
//! # Invariants
//! 1. Deterministic: the same spec gives byte-identical messages, whatever
//!    the order of its inputs, environment, outputs and platform properties
//!    (names are sorted by UTF-8 bytes, as REAPI requires).
//! 2. Every digest the action reaches (command, directories, files) is a key
//!    of [`PreparedAction::blobs`], and so is the action's own.
//! 3. Paths are relative, `/`-separated, and have no empty, `.` or `..`
//!    components; an input is never both a file and a directory.

use std::collections::BTreeMap;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::protobuf;
use bytes::Bytes;

use crate::digest::{Digest, encode_message};
use crate::error::RemoteError;
use crate::spec::ActionSpec;

impl ActionSpec {
    /// The digest of the `Action` this spec builds, without contacting any
    /// server: the action cache key.
    ///
    /// # Errors
    /// [`RemoteError::InvalidSpec`] when the spec cannot be expressed (no
    /// arguments, a bad or duplicate path, a duplicate variable).
    pub fn action_digest(&self) -> Result<Digest, RemoteError> {
        Ok(prepare(self)?.action_digest)
    }
}

/// An action's messages and blobs, ready to upload and execute.
#[derive(Debug, Clone)]
pub(crate) struct PreparedAction {
    /// The `Action`'s digest: the action cache key and what `Execute` names.
    pub(crate) action_digest: Digest,
    /// The `Command`, which the unit tests inspect.
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the unit tests"))]
    pub(crate) command: reapi::Command,
    /// Every blob the action needs, by digest: the `Action`, the `Command`,
    /// each `Directory`, each input file (identical contents once).
    pub(crate) blobs: BTreeMap<Digest, Bytes>,
}

/// Builds the action `spec` describes.
///
/// # Errors
/// [`RemoteError::InvalidSpec`] when the spec cannot be expressed.
pub(crate) fn prepare(spec: &ActionSpec) -> Result<PreparedAction, RemoteError> {
    if spec.arguments.is_empty() {
        return Err(invalid("the command has no arguments"));
    }
    let mut blobs = BTreeMap::new();

    let mut root = Tree::default();
    for input in &spec.inputs {
        check_path(&input.path, "input path")?;
        let digest = Digest::of(&input.contents);
        blobs.insert(digest.clone(), input.contents.clone());
        root.insert_file(&input.path, digest, input.executable)?;
    }
    if !spec.working_directory.is_empty() {
        check_path(&spec.working_directory, "working directory")?;
        root.ensure_directory(&spec.working_directory)?;
    }
    let input_root_digest = root.encode(&mut blobs);

    let mut environment = spec.env.clone();
    environment.sort();
    if let Some(pair) = environment.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(invalid(&format!(
            "environment variable {} is set twice",
            pair[0].0
        )));
    }
    let mut output_paths = spec.output_files.clone();
    for path in &output_paths {
        check_path(path, "output path")?;
    }
    output_paths.sort();
    output_paths.dedup();
    let platform = platform(&spec.platform);

    // `output_files` and `platform` are deprecated in v2.1 and v2.2, and a
    // server that knows `output_paths` ignores `output_files`; both are set
    // so that older servers understand the action too.
    #[allow(deprecated)]
    let command = reapi::Command {
        arguments: spec.arguments.clone(),
        environment_variables: environment
            .into_iter()
            .map(|(name, value)| reapi::command::EnvironmentVariable { name, value })
            .collect(),
        output_files: output_paths.clone(),
        output_paths,
        platform: platform.clone(),
        working_directory: spec.working_directory.clone(),
        ..reapi::Command::default()
    };
    let (command_digest, command_bytes) = encode_message(&command);
    blobs.insert(command_digest.clone(), command_bytes);

    let action = reapi::Action {
        command_digest: Some(command_digest.to_proto()),
        input_root_digest: Some(input_root_digest.to_proto()),
        timeout: spec.timeout.map(|timeout| protobuf::Duration {
            seconds: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(timeout.subsec_nanos()).expect("nanoseconds below 10^9"),
        }),
        do_not_cache: spec.do_not_cache,
        platform,
        ..reapi::Action::default()
    };
    let (action_digest, action_bytes) = encode_message(&action);
    blobs.insert(action_digest.clone(), action_bytes);

    Ok(PreparedAction {
        action_digest,
        command,
        blobs,
    })
}

/// The platform message, properties sorted by name then value, or none for
/// no properties.
fn platform(properties: &[(String, String)]) -> Option<reapi::Platform> {
    if properties.is_empty() {
        return None;
    }
    let mut properties = properties.to_vec();
    properties.sort();
    properties.dedup();
    Some(reapi::Platform {
        properties: properties
            .into_iter()
            .map(|(name, value)| reapi::platform::Property { name, value })
            .collect(),
    })
}

/// Refuses a path REAPI cannot name.
fn check_path(path: &str, what: &str) -> Result<(), RemoteError> {
    let bad = |why: &str| Err(invalid(&format!("{what} {path:?} {why}")));
    if path.is_empty() {
        return bad("is empty");
    }
    if path.starts_with('/') {
        return bad("is absolute");
    }
    if path.contains('\0') {
        return bad("contains a NUL byte");
    }
    for component in path.split('/') {
        match component {
            "" => return bad("has an empty component"),
            "." | ".." => return bad("has a . or .. component"),
            _ => {}
        }
    }
    Ok(())
}

fn invalid(message: &str) -> RemoteError {
    RemoteError::InvalidSpec {
        message: message.to_owned(),
    }
}

/// One directory of the input root while it is being built. Children are
/// kept in a `BTreeMap`, so they come out sorted by UTF-8 bytes.
#[derive(Debug, Default)]
struct Tree {
    children: BTreeMap<String, Node>,
}

#[derive(Debug)]
enum Node {
    File { digest: Digest, executable: bool },
    Directory(Tree),
}

impl Tree {
    fn insert_file(
        &mut self,
        path: &str,
        digest: Digest,
        executable: bool,
    ) -> Result<(), RemoteError> {
        let (parent, name) = match path.rsplit_once('/') {
            Some((parent, name)) => (self.ensure_directory(parent)?, name),
            None => (self, path),
        };
        match parent.children.get(name) {
            Some(Node::File { .. }) => Err(invalid(&format!("input path {path:?} is given twice"))),
            Some(Node::Directory(_)) => Err(invalid(&format!(
                "input path {path:?} is both a file and a directory"
            ))),
            None => {
                parent
                    .children
                    .insert(name.to_owned(), Node::File { digest, executable });
                Ok(())
            }
        }
    }

    /// The directory at `path`, created with its parents if absent.
    fn ensure_directory(&mut self, path: &str) -> Result<&mut Tree, RemoteError> {
        let mut tree = self;
        let mut prefix_len = 0;
        for component in path.split('/') {
            prefix_len += component.len();
            let prefix = &path[..prefix_len];
            prefix_len += 1; // the separator after this component
            let node = tree
                .children
                .entry(component.to_owned())
                .or_insert_with(|| Node::Directory(Tree::default()));
            tree = match node {
                Node::Directory(child) => child,
                Node::File { .. } => {
                    return Err(invalid(&format!(
                        "input path {prefix:?} is both a file and a directory"
                    )));
                }
            };
        }
        Ok(tree)
    }

    /// Encodes this directory and its subdirectories into `blobs`, returning
    /// this directory's digest.
    fn encode(&self, blobs: &mut BTreeMap<Digest, Bytes>) -> Digest {
        let mut directory = reapi::Directory::default();
        for (name, node) in &self.children {
            match node {
                Node::File { digest, executable } => directory.files.push(reapi::FileNode {
                    name: name.clone(),
                    digest: Some(digest.to_proto()),
                    is_executable: *executable,
                    node_properties: None,
                }),
                Node::Directory(child) => {
                    let child_digest = child.encode(blobs);
                    directory.directories.push(reapi::DirectoryNode {
                        name: name.clone(),
                        digest: Some(child_digest.to_proto()),
                    });
                }
            }
        }
        let (digest, bytes) = encode_message(&directory);
        blobs.insert(digest.clone(), bytes);
        digest
    }
}

#[cfg(test)]
mod tests;
