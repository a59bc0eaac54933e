//! The index's vocabulary: module paths, items, flattened `use` declarations,
//! `mod` declarations, and what the Analysis and Artifact stages output.
//!
//! Plain data, all `Send + Sync` and serialisable to JSON. Nothing here reads
//! a file, parses, or resolves anything.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ParseError;

/// A path inside one crate, written from the crate root: `crate`,
/// `crate::a::b`, `crate::a::b::Item`. It names a module or an item; the
/// root segment `crate` is implied and not stored.
///
/// Its segments are shared: a clone costs a reference count, not a copy.
/// A file's module path is kept by its location, its parent's declarations,
/// its Analysis and Artifact and the index; in a module chain N deep the
/// paths are O(N) long each, and copying them made memory O(N²) many times
/// over (736 MB for a 2 000-deep chain).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CratePath(Arc<[String]>);

impl CratePath {
    /// The crate root, `crate`.
    pub fn root() -> Self {
        Self::default()
    }

    /// The path `crate::` followed by `segments`.
    pub fn from_segments<S: Into<String>>(segments: impl IntoIterator<Item = S>) -> Self {
        Self(segments.into_iter().map(Into::into).collect())
    }

    /// The segments after `crate`.
    pub fn segments(&self) -> &[String] {
        &self.0
    }

    /// Whether this is the crate root.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// This path followed by `segments` (itself, shared, when there are
    /// none).
    pub fn join<S: AsRef<str>>(&self, segments: &[S]) -> Self {
        if segments.is_empty() {
            return self.clone();
        }
        Self(
            self.0
                .iter()
                .cloned()
                .chain(segments.iter().map(|segment| segment.as_ref().to_owned()))
                .collect(),
        )
    }

    /// The enclosing path, or `None` at the crate root.
    pub fn parent(&self) -> Option<Self> {
        let (_, parent) = self.0.split_last()?;
        Some(Self(parent.into()))
    }

    /// The first `len` segments.
    pub fn prefix(&self, len: usize) -> Self {
        Self(self.0[..len.min(self.0.len())].into())
    }

    /// Whether `self` is `other` or lies inside it.
    pub fn starts_with(&self, other: &Self) -> bool {
        self.0.starts_with(&other.0)
    }
}

impl fmt::Display for CratePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("crate")?;
        for segment in self.0.iter() {
            write!(f, "::{segment}")?;
        }
        Ok(())
    }
}

impl Serialize for CratePath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The inverse of the `Display` form `crate::a::b` (an output store reads
/// it back).
impl<'de> Deserialize<'de> for CratePath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let Some(rest) = text.strip_prefix("crate") else {
            return Err(serde::de::Error::custom(format!(
                "not a crate path: {text}"
            )));
        };
        Ok(Self::from_segments(rest.split("::").skip(1)))
    }
}

/// What kind of item an [`Item`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// `fn` (also a function in an `extern` block).
    Fn,
    /// `struct`.
    Struct,
    /// `enum`.
    Enum,
    /// `union`.
    Union,
    /// `trait` (also a trait alias).
    Trait,
    /// `type` alias (also a type in an `extern` block).
    Type,
    /// `const`.
    Const,
    /// `static` (also a static in an `extern` block).
    Static,
    /// `mod`, inline or declared with `mod name;`.
    Mod,
    /// `macro_rules! name`.
    Macro,
    /// A re-export: a `use` whose visibility is not private. Its name is the
    /// alias or the last segment; glob re-exports have no name and are not
    /// items.
    Use,
    /// `impl` block; its name is `Type` or `Trait for Type`.
    Impl,
    /// `extern crate`; its name is the alias or the crate.
    ExternCrate,
}

impl ItemKind {
    /// The keyword-like name used in renderings and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fn => "fn",
            Self::Struct => "struct",
            Self::Enum => "enum",
            Self::Union => "union",
            Self::Trait => "trait",
            Self::Type => "type",
            Self::Const => "const",
            Self::Static => "static",
            Self::Mod => "mod",
            Self::Macro => "macro",
            Self::Use => "use",
            Self::Impl => "impl",
            Self::ExternCrate => "extern_crate",
        }
    }
}

impl fmt::Display for ItemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who may name an item or a re-export.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Visibility {
    /// `pub` (and `#[macro_export]` on a `macro_rules!`).
    Public,
    /// `pub(crate)`.
    Crate,
    /// `pub(super)`.
    Super,
    /// `pub(in path)`, with the path as written.
    InPath(String),
    /// No visibility (also `pub(self)`, and every `impl`).
    Private,
}

impl fmt::Display for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Public => f.write_str("pub"),
            Self::Crate => f.write_str("pub(crate)"),
            Self::Super => f.write_str("pub(super)"),
            Self::InPath(path) => write!(f, "pub(in {path})"),
            Self::Private => f.write_str("private"),
        }
    }
}

impl Serialize for Visibility {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The inverse of the `Display` form (an output store reads it back).
impl<'de> Deserialize<'de> for Visibility {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(match text.as_str() {
            "pub" => Self::Public,
            "pub(crate)" => Self::Crate,
            "pub(super)" => Self::Super,
            "private" => Self::Private,
            other => match other
                .strip_prefix("pub(in ")
                .and_then(|p| p.strip_suffix(')'))
            {
                Some(path) => Self::InPath(path.to_owned()),
                None => {
                    return Err(serde::de::Error::custom(format!(
                        "not a visibility: {other}"
                    )));
                }
            },
        })
    }
}

/// One item of a file's item table.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Item {
    /// Its name (see [`ItemKind`] for impls and re-exports).
    pub name: String,
    /// The inline modules it sits in inside its file, outermost first (empty
    /// at the file's top level): `mod a { mod b { fn f() {} } }` gives `f`
    /// the scope `["a", "b"]`.
    pub scope: Vec<String>,
    /// What it is.
    pub kind: ItemKind,
    /// The 1-based line of its name (of the `impl` keyword for an impl).
    pub line: u32,
    /// Who may name it.
    pub visibility: Visibility,
}

impl Item {
    /// Its full path, given the module path of its file.
    pub fn path_in(&self, module_path: &CratePath) -> CratePath {
        module_path.join(&self.scope).join(&[self.name.as_str()])
    }
}

/// One leaf of a flattened `use` tree: `use a::{b, c::d as e};` gives two.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UseDecl {
    /// The segments as written, `crate`, `self` and `super` included. A glob
    /// ends in `"*"`; a path with a leading `::` starts with `""`; a `self`
    /// inside a group is folded into its prefix (`a::{self}` is `a`).
    pub path: Vec<String>,
    /// The `as` name, if any (`_` included).
    pub alias: Option<String>,
    /// The 1-based line of the leaf (its name, or the `*`).
    pub line: u32,
    /// The inline modules the `use` sits in inside its file.
    pub scope: Vec<String>,
    /// The `use` item's visibility.
    pub visibility: Visibility,
    /// What the path names inside this crate, when it is crate-local (it
    /// starts with `crate`, `self` or `super`, or with a module or item
    /// declared in the same scope); for a glob, the module it reads from.
    /// `None` for `std::…`, other crates and anything not provably local.
    pub local: Option<CratePath>,
}

impl UseDecl {
    /// The path as written, joined with `::`.
    pub fn written(&self) -> String {
        self.path.join("::")
    }

    /// Whether this is a glob import (`a::*`).
    pub fn is_glob(&self) -> bool {
        self.path.last().is_some_and(|segment| segment == "*")
    }
}

/// One `mod name;` declaration and the file it names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModDecl {
    /// The module's name.
    pub name: String,
    /// The inline modules the declaration sits in inside its file.
    pub scope: Vec<String>,
    /// The 1-based line of the name.
    pub line: u32,
    /// The `#[path = "…"]` value, if any.
    pub path_attr: Option<String>,
    /// The child file, canonical: the first existing candidate, or the first
    /// candidate when none exists (loading it then reports it missing).
    pub file: PathBuf,
    /// Whether the child file existed when the declaration was parsed.
    pub exists: bool,
    /// A candidate rather than a certainty: declared inside a macro
    /// invocation or a `macro_rules!` body (never expanded), behind
    /// `#[cfg(…)]`, or one branch of `#[cfg_attr(…, path = "…")]` (cfg is not
    /// evaluated). An optional file that exists is indexed; one that does
    /// not is no error.
    pub optional: bool,
}

/// One item-position `include!("…")` of a Rust file. The included file is
/// indexed as its own entry, with the module path of the scope that
/// includes it; its items are not merged into the including file's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IncludeDecl {
    /// The path as written, relative to the including file's directory.
    pub path: String,
    /// The inline modules the `include!` sits in inside its file.
    pub scope: Vec<String>,
    /// The 1-based line of the `include!`.
    pub line: u32,
    /// The included file, canonical when it exists.
    pub file: PathBuf,
    /// Whether it existed when the including file was parsed.
    pub exists: bool,
    /// Found inside a macro invocation or `macro_rules!` body (see
    /// [`ModDecl::optional`]).
    pub optional: bool,
}

/// Where a `use` leads: a file and a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Target {
    /// The defining file, canonical.
    pub file: String,
    /// The defining line (1 for a module that is a whole file).
    pub line: u32,
}

/// One `use` of a file and, when the indexer could resolve it, where it leads.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResolvedUse {
    /// The path as written (see [`UseDecl::path`]), joined with `::`.
    pub path: String,
    /// The `as` name, if any.
    pub alias: Option<String>,
    /// The line of the use.
    pub line: u32,
    /// The defining file and line, or `None` when unresolved.
    pub target: Option<Target>,
}

/// The Analysis stage's output: a file's module path, its item table, and
/// its flattened `use`s (which its Artifact resolves).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileIndex {
    /// The module the file defines.
    pub module_path: CratePath,
    /// Every item, inline modules' items included, in source order (shared
    /// with the Source output and the Artifact, not copied).
    pub items: Arc<[Item]>,
    /// Every `use` leaf, in source order (shared with the Source output).
    pub uses: Arc<[UseDecl]>,
    /// Why the file could not be parsed, if it could not: then `items` and
    /// `uses` are empty, importers resolve nothing into it, and its own
    /// Artifact answers this error.
    #[serde(skip)]
    pub parse_error: Option<ParseError>,
}

/// The Artifact stage's output: one file's entry in the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileArtifact {
    /// The module the file defines.
    pub module_path: CratePath,
    /// The item table, as Analysis built it (shared with it, not copied).
    pub items: Arc<[Item]>,
    /// Every `use` leaf, in source order, resolved where possible.
    pub uses: Vec<ResolvedUse>,
    /// How many uses resolved.
    pub resolved: usize,
    /// How many did not.
    pub unresolved: usize,
}

#[cfg(test)]
mod tests;
