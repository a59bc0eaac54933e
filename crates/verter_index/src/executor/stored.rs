//! The indexer's outputs in an output store (the scheduler's "Persistent
//! outputs"): MessagePack encodings of a parse and an artifact, and the
//! checks a stored parse passes before it is used.
//!
//! - **Source**: everything a [`RustSource`] holds, in a file that parsed
//!   (a file with a parse error is parsed again: it is rare and cheap). A
//!   stored parse is used only while what it read besides its text still
//!   answers the same: its location, each file probe and each module
//!   lookup. Then it records its children in the declarations table again,
//!   as its parse did.
//! - **Analysis**: nothing is stored but a marker; it is rebuilt from its
//!   parse, whose item and `use` tables it shares (as a run's does).
//! - **Artifact**: the resolved `use`s; its item table is its Analysis'.
//!
//! Part of the `executor` module. It owns the encodings and never touches
//! the store itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use verter_scheduler::{AnalysisInput, ArtifactInput, SourceInput};

use super::{DerivedReads, RustIndexer, RustSource};
use crate::declarations::{Declared, ModuleRead};
use crate::layout::ModuleLocation;
use crate::model::{
    CratePath, FileArtifact, FileIndex, IncludeDecl, Item, ModDecl, ResolvedUse, UseDecl,
};
use crate::probe::is_file;

/// A location as stored: module path, crate root, root directory, `mod.rs`.
type StoredLocation = (CratePath, String, String, bool);

/// A declared child as stored: file, location, existed, defines a module.
type StoredDeclared = (String, StoredLocation, bool, bool);

/// A module lookup as stored: crate root, module, within, answer, layout.
type StoredRead = (String, CratePath, CratePath, Option<String>, Option<String>);

/// A parse as stored (fields in this order in both directions).
#[derive(Serialize)]
struct SourceOut<'a> {
    location: StoredLocation,
    items: &'a [Item],
    mods: &'a [ModDecl],
    uses: &'a [UseDecl],
    includes: &'a [IncludeDecl],
    blockers: Vec<&'a str>,
    probes: Vec<(&'a str, bool)>,
    modules: Vec<StoredRead>,
    declared: Vec<StoredDeclared>,
}

#[derive(Deserialize)]
struct SourceIn {
    location: StoredLocation,
    items: Vec<Item>,
    mods: Vec<ModDecl>,
    uses: Vec<UseDecl>,
    includes: Vec<IncludeDecl>,
    blockers: Vec<String>,
    probes: Vec<(String, bool)>,
    modules: Vec<StoredRead>,
    declared: Vec<StoredDeclared>,
}

/// The bytes of a stored Analysis: it is rebuilt from its parse.
const ANALYSIS_MARKER: &[u8] = b"verter-index:analysis-from-parse";

fn text(path: &Path) -> Option<&str> {
    path.to_str()
}

/// `path` as stored (`Some(None)` for no path), or `None` when it is not
/// UTF-8.
fn optional_text(path: Option<&Path>) -> Option<Option<String>> {
    match path {
        Some(path) => Some(Some(text(path)?.to_owned())),
        None => Some(None),
    }
}

fn location_out(location: &ModuleLocation) -> Option<StoredLocation> {
    Some((
        location.module_path.clone(),
        text(&location.crate_root)?.to_owned(),
        text(&location.root_dir)?.to_owned(),
        location.mod_rs,
    ))
}

fn location_in((module_path, crate_root, root_dir, mod_rs): StoredLocation) -> ModuleLocation {
    ModuleLocation {
        module_path,
        crate_root: PathBuf::from(crate_root),
        root_dir: PathBuf::from(root_dir),
        mod_rs,
    }
}

/// `source`'s stored bytes, or `None` for a parse that is not stored (a
/// parse error, a path that is not UTF-8).
pub(crate) fn encode_source(source: &RustSource, into: &mut Vec<u8>) -> Option<()> {
    if source.parse_error.is_some() {
        return None;
    }
    let out = SourceOut {
        location: location_out(&source.location)?,
        items: &source.items,
        mods: &source.mods,
        uses: &source.uses,
        includes: &source.includes,
        blockers: source
            .blockers
            .iter()
            .map(|path| text(path))
            .collect::<Option<_>>()?,
        probes: source
            .reads
            .probes
            .iter()
            .map(|(path, found)| Some((text(path)?, *found)))
            .collect::<Option<_>>()?,
        modules: source
            .reads
            .modules
            .iter()
            .map(|read| {
                Some((
                    text(&read.crate_root)?.to_owned(),
                    read.module.clone(),
                    read.within.clone(),
                    optional_text(read.answer.as_deref())?,
                    optional_text(read.layout.as_deref())?,
                ))
            })
            .collect::<Option<_>>()?,
        declared: source
            .declared
            .iter()
            .map(|declared| {
                Some((
                    text(&declared.child)?.to_owned(),
                    location_out(&declared.location)?,
                    declared.exists,
                    declared.defines_module,
                ))
            })
            .collect::<Option<_>>()?,
    };
    rmp_serde::encode::write(into, &out).ok()
}

impl RustIndexer {
    /// The parse of `input` from `bytes`, if they decode and everything the
    /// parse read besides its text still answers the same; it then records
    /// its children in the declarations table, as its run did.
    pub(crate) fn decode_stored_source(
        &self,
        input: &SourceInput<'_>,
        bytes: &[u8],
    ) -> Option<RustSource> {
        let stored: SourceIn = rmp_serde::from_slice(bytes).ok()?;
        let file = Path::new(input.canonical.as_str());
        let location = location_in(stored.location);
        if !self.location_matches(file, &location) {
            return None;
        }
        let probes: Vec<(PathBuf, bool)> = stored
            .probes
            .into_iter()
            .map(|(path, found)| (PathBuf::from(path), found))
            .collect();
        if probes.iter().any(|(path, found)| is_file(path) != *found) {
            return None;
        }
        let modules: Vec<ModuleRead> = stored
            .modules
            .into_iter()
            .map(|(crate_root, module, within, answer, layout)| ModuleRead {
                crate_root: PathBuf::from(crate_root),
                module,
                within,
                answer: answer.map(PathBuf::from),
                layout: layout.map(PathBuf::from),
            })
            .collect();
        let declared: Vec<Declared> = stored
            .declared
            .into_iter()
            .map(|(child, location, exists, defines_module)| Declared {
                child: PathBuf::from(child),
                location: location_in(location),
                exists,
                defines_module,
            })
            .collect();
        // Recorded before the lookups are compared, as the parse records
        // before it looks up (a file may look up a module it declares
        // itself). Should they answer otherwise now, the parse runs and
        // records its own.
        self.declarations()
            .record(file, &location, declared.clone());
        if !modules.is_empty()
            && self
                .declarations()
                .module_reads_changed([(file, modules.as_slice())], None)
                .first()
                .copied()
                .unwrap_or(true)
        {
            return None;
        }
        Some(RustSource {
            location,
            items: stored.items.into(),
            mods: stored.mods,
            uses: stored.uses.into(),
            includes: stored.includes,
            blockers: stored.blockers.into_iter().map(PathBuf::from).collect(),
            parse_error: None,
            reads: DerivedReads { probes, modules },
            declared: declared.into(),
        })
    }
}

/// A stored Analysis' bytes: a marker, the analysis being its parse's.
pub(crate) fn encode_analysis(into: &mut Vec<u8>) {
    into.extend_from_slice(ANALYSIS_MARKER);
}

/// The Analysis of `input`'s parse, when `bytes` are the marker.
pub(crate) fn decode_analysis(
    input: &AnalysisInput<'_, RustSource>,
    bytes: &[u8],
) -> Option<FileIndex> {
    (bytes == ANALYSIS_MARKER).then(|| super::analysis_of(&input.source.parsed))
}

/// An artifact's stored bytes: its resolved uses and counts (its item
/// table is its Analysis').
pub(crate) fn encode_artifact(artifact: &FileArtifact, into: &mut Vec<u8>) -> Option<()> {
    rmp_serde::encode::write(
        into,
        &(&artifact.uses, artifact.resolved, artifact.unresolved),
    )
    .ok()
}

/// The artifact of `input` from `bytes`.
pub(crate) fn decode_artifact(
    input: &ArtifactInput<'_, FileIndex, FileArtifact>,
    bytes: &[u8],
) -> Option<FileArtifact> {
    let (uses, resolved, unresolved): (Vec<ResolvedUse>, usize, usize) =
        rmp_serde::from_slice(bytes).ok()?;
    let analysis = input.analysis.data();
    Some(FileArtifact {
        module_path: analysis.module_path.clone(),
        items: Arc::clone(&analysis.items),
        uses,
        resolved,
        unresolved,
    })
}
