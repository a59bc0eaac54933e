//! The nesting guard: a bound on how deep `syn` will recurse on a file,
//! computed from its tokens before `syn` parses them.
//!
//! `syn` parses recursively — one level per bracket group, and also one per
//! prefix operator (`-x`, `!x`, `*x`, `&x`), per reference, pointer or
//! generic type (`&T`, `*const T`, `Vec<T>`), per closure (`|x| …`), per
//! assignment in a chain (`a = b = …`) and per `return`/`break`/`yield`.
//! A stack overflow cannot be caught: one hostile file would abort every
//! other file's work. So the Source stage refuses a file whose
//! [`recursion_estimate`] exceeds [`MAX_NESTING`] with a typed
//! [`NestingError::TooDeep`], and the stage threads' stack is sized for
//! that limit (`SchedulerConfig::stage_stack_size`).
//!
//! # The estimate
//! The token trees are walked with an explicit stack (lexing, walking and
//! dropping a token tree never recurse). At each bracket level the guard
//! counts, since the last `;`, `,` or `=>` of that level: prefix-position
//! `- ! * & |`, every assignment (`=` and the compound ones), `return`,
//! `break`, `yield`, `box`, and every `<` not yet closed by a `>`. Entering
//! a group costs one level plus everything counted so far on every
//! enclosing level. The estimate is the largest cost anywhere. It
//! over-counts (`a < b` counts, a binary `-` after a keyword counts) and
//! that is the safe direction: it must never under-count what `syn` does.
//!
//! # Invariants
//! 1. The estimate of a file is at least the nesting of its brackets and of
//!    each recursive construct above
//!    (`every_recursive_construct_counts_one_level_each`).
//! 2. Ordinary code stays far below the limit
//!    (`this_crates_own_sources_are_far_below_the_limit`).
//! 3. A file at exactly the limit parses on a thread with the default stage
//!    stack, for every construct, in debug and release builds
//!    (`a_file_at_the_limit_parses_on_the_configured_stack`).

use proc_macro2::{Spacing, TokenStream, TokenTree, token_stream};

/// The largest recursion estimate the Source stage accepts. Ordinary code
/// stays under 40; a generic type costs `syn` up to 64 KiB of stack per
/// level in a debug build and 8 KiB in release, so 128 levels need at most
/// 8 MiB, half the default stage stack.
pub const MAX_NESTING: usize = 128;

/// Why the guard refused a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NestingError {
    /// The file nests deeper than the parser may recurse.
    #[error("nests {depth} levels deep, past the limit of {limit}: refused before parsing")]
    TooDeep {
        /// The estimate (the walk stops counting just past the limit).
        depth: usize,
        /// [`MAX_NESTING`].
        limit: usize,
    },
}

/// Refuses `tokens` when their recursion estimate exceeds `limit`.
///
/// # Errors
/// [`NestingError::TooDeep`], with the estimate reached.
pub(crate) fn check(tokens: &TokenStream, limit: usize) -> Result<usize, NestingError> {
    let depth = recursion_estimate(tokens, limit);
    if depth > limit {
        Err(NestingError::TooDeep { depth, limit })
    } else {
        Ok(depth)
    }
}

/// Whether `ident` starts an item or a statement: after a closed `{ … }`,
/// one of these ends what was being counted (`fn a() -> &T { … } fn b() …`).
fn is_item_start(ident: &str) -> bool {
    matches!(
        ident,
        "fn" | "pub"
            | "impl"
            | "struct"
            | "enum"
            | "union"
            | "mod"
            | "use"
            | "let"
            | "const"
            | "static"
            | "trait"
            | "type"
            | "extern"
            | "unsafe"
            | "async"
            | "macro_rules"
            | "crate"
            | "where"
    )
}

/// Whether the token after keyword `ident` is in prefix position.
/// (`return`, `break`, `yield` and `box` also start a nested expression
/// `syn` parses recursively: see `Level::ident`.)
fn is_not_operand(ident: &str) -> bool {
    matches!(
        ident,
        "as" | "break"
            | "const"
            | "dyn"
            | "else"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "match"
            | "move"
            | "mut"
            | "ref"
            | "return"
            | "static"
            | "unsafe"
            | "where"
            | "while"
            | "yield"
            | "box"
    )
}

/// One bracket level of the walk.
struct Level {
    tokens: token_stream::IntoIter,
    /// The cost of being inside this level at all.
    base: usize,
    /// Recursive tokens counted since the level's last separator.
    run: usize,
    /// `<` not yet closed since the last separator.
    angles: usize,
    /// Whether the previous token ends an operand (so a `-` after it is
    /// binary).
    after_operand: bool,
    /// A joint `=`, `<` or `>` whose meaning the next character decides
    /// (`==`, `<=`, `>=`, `=>` or an assignment, an angle).
    pending: Option<char>,
    /// The previous punctuation, when joint with this one, and whether it
    /// was a prefix operator (`&&x` is two references) or not (`a && b`).
    joined_operator: Option<(char, bool)>,
    /// The previous token was a lifetime's quote.
    lifetime: bool,
    /// The previous token was a closed `{ … }`: an item or a statement may
    /// end there.
    after_block: bool,
    /// Whether this level is a `{ … }` group.
    brace: bool,
    /// Nothing has been counted since the level started or its last
    /// separator (so an attribute here starts an item or a statement).
    at_start: bool,
}

impl Level {
    fn new(tokens: TokenStream, base: usize) -> Self {
        Self {
            tokens: tokens.into_iter(),
            base,
            run: 0,
            angles: 0,
            after_operand: false,
            pending: None,
            joined_operator: None,
            lifetime: false,
            after_block: false,
            brace: false,
            at_start: true,
        }
    }

    fn cost(&self) -> usize {
        self.base + self.run + self.angles
    }

    fn separate(&mut self) {
        self.run = 0;
        self.angles = 0;
        self.after_operand = false;
        self.at_start = true;
    }

    /// A pending `=`, `<` or `>` that nothing joined: an assignment, an
    /// opening angle, a closing one.
    fn settle(&mut self) {
        match self.pending.take() {
            Some('=') => self.run += 1,
            Some('<') => self.angles += 1,
            Some('>') => self.angles = self.angles.saturating_sub(1),
            _ => {}
        }
    }

    /// Anything but punctuation: settles what was pending.
    fn not_punct(&mut self) {
        self.settle();
        self.joined_operator = None;
    }

    fn ident(&mut self, ident: &str) {
        self.at_start = false;
        self.not_punct();
        if std::mem::take(&mut self.after_block) && is_item_start(ident) {
            self.separate();
        }
        if std::mem::take(&mut self.lifetime) {
            self.after_operand = false;
            return;
        }
        if matches!(ident, "return" | "break" | "yield" | "box") {
            self.run += 1;
        }
        self.after_operand = !is_not_operand(ident);
    }

    fn literal(&mut self) {
        self.at_start = false;
        self.not_punct();
        self.after_block = false;
        self.lifetime = false;
        self.after_operand = true;
    }

    fn punct(&mut self, c: char, spacing: Spacing) {
        let joined = self.joined_operator.take();
        let after_block = std::mem::take(&mut self.after_block);
        let at_start = std::mem::take(&mut self.at_start);
        if c == '#' {
            // An attribute (doc comments are attributes). At the start of an
            // item or a statement it ends what came before; its `!` is not an
            // operator either way. Mid-expression it separates nothing, so
            // `a = #[x] a = …` still counts every assignment.
            if at_start || after_block {
                self.settle();
                self.separate();
                self.at_start = false;
            }
            self.after_operand = true;
            return;
        }
        match (self.pending.take(), c) {
            // `==`, `<=`, `>=` compare; `=>` starts a match arm's body.
            (Some('=' | '<' | '>'), '=') => {}
            (Some('='), '>') => self.separate(),
            (pending, _) => {
                self.pending = pending;
                self.settle();
                self.single(c, spacing, joined);
            }
        }
        // `?` ends an operand (`x?`); other punctuation leaves the next token
        // in prefix position.
        self.after_operand = c == '?';
    }

    fn single(&mut self, c: char, spacing: Spacing, joined: Option<(char, bool)>) {
        let joint = spacing == Spacing::Joint;
        match c {
            ';' | ',' => self.separate(),
            '\'' => self.lifetime = true,
            // `!=` compares, `..=` is a range; `+=`, `&=`, …: an assignment.
            '=' if matches!(joined, Some(('!' | '.', _))) => {}
            // `->` names a return type.
            '>' if matches!(joined, Some(('-', _))) => {}
            '=' if joined.is_some() => self.run += 1,
            '=' | '<' | '>' if joint => self.pending = Some(c),
            '=' | '<' | '>' => {
                self.pending = Some(c);
                self.settle();
            }
            '-' | '!' | '*' | '&' | '|' => {
                let prefix = joined.map_or(!self.after_operand, |(_, prefix)| prefix);
                if prefix {
                    self.run += 1;
                }
                if joint {
                    self.joined_operator = Some((c, prefix));
                }
            }
            _ => {
                if joint {
                    self.joined_operator = Some((c, false));
                }
            }
        }
    }
}

/// The recursion estimate of `tokens` (see the module docs). Stops walking
/// once it exceeds `stop_past`, returning the value reached.
pub(crate) fn recursion_estimate(tokens: &TokenStream, stop_past: usize) -> usize {
    use std::fmt::Write as _;
    let mut deepest = 0;
    let mut name = String::new();
    let mut levels = vec![Level::new(tokens.clone(), 0)];
    while let Some(level) = levels.last_mut() {
        let Some(tree) = level.tokens.next() else {
            let closed = levels.pop().map(|level| level.brace);
            if let Some(outer) = levels.last_mut() {
                // A closed group is an operand (`(a)`, `[1]`, `{ … }`).
                outer.after_operand = true;
                outer.after_block = closed == Some(true);
            }
            continue;
        };
        match tree {
            TokenTree::Group(group) => {
                let cost = level.cost() + 1;
                deepest = deepest.max(cost);
                if deepest > stop_past {
                    return deepest;
                }
                level.not_punct();
                level.lifetime = false;
                level.after_block = false;
                level.at_start = false;
                let mut inner = Level::new(group.stream(), cost);
                inner.brace = group.delimiter() == proc_macro2::Delimiter::Brace;
                levels.push(inner);
                continue;
            }
            TokenTree::Ident(ident) => {
                // One buffer for every identifier: no allocation per token.
                name.clear();
                let _ = write!(name, "{ident}");
                level.ident(&name);
            }
            TokenTree::Punct(punct) => level.punct(punct.as_char(), punct.spacing()),
            TokenTree::Literal(_) => level.literal(),
        }
        deepest = deepest.max(level.cost());
        if deepest > stop_past {
            return deepest;
        }
    }
    deepest
}

#[cfg(test)]
mod tests;
