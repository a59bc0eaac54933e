//! The guard: bounds on what `syn` and the summary will do with a file,
//! computed from its tokens before `syn` parses them. A stack overflow
//! cannot be caught: one hostile file would abort every other file's work.
//! So the Source stage refuses, with a typed [`NestingError`], a file that
//! passes one of three limits, and the stage threads' stack is sized for
//! them (`SchedulerConfig::stage_stack_size`).
//!
//! 1. **Recursion** ([`MAX_NESTING`]). `syn` parses recursively: one level
//!    per bracket group, and also one per prefix operator (`-x`, `!x`, `*x`,
//!    `&x`), reference, pointer or generic type (`&T`, `*const T`,
//!    `Vec<T>`, across its commas), return type (`fn() -> T`,
//!    `Fn() -> T`), closure (`|a, b| …`, across its commas), assignment in
//!    a chain (`a = b = …`), range (`..x`), binding (`a @ p`), `use` path
//!    segment (`a::b::…`), `return`/`break`/`yield`/`become`/`box`, and per
//!    `if`, `while`, `match`, `for` or `let` nested in another expression
//!    (`if if …`, `match match …`; an `else if` chain is parsed in a loop).
//!    Each level costs up to 64 KiB of stack in a debug build.
//! 2. **Syntax tree depth** ([`MAX_TREE_DEPTH`]). What `syn` parses in a
//!    loop still nests in the tree it builds: `x???…`, `a.b.c…`,
//!    `a.b().c()…`, `f()()…`, `a[0][0]…`, `x.await.await…`, `a + b + …` (every
//!    binary operator), `x as T as T…`, `if … else if … else if …`. Dropping
//!    the tree, and walking it (the summary's `#[path]` search), recurse
//!    once per level: a million-token chain overflowed the 16 MiB stage
//!    stack while the recursion estimate stayed at 2.
//! 3. **Declarations** ([`MAX_DECLARATIONS`]): `mod name;`, `include!` and
//!    `path = "…"` shapes, each a file the Source stage probes and the
//!    scheduler then tracks; a million of them in one file is no crate.
//!
//! # The walk
//! The token trees are walked with an explicit stack (lexing, walking and
//! dropping a token tree never recurse). Joined punctuation is read as
//! Rust's operators (`&&`, `->`, `..=`, `>>`, …), the longest first. Each
//! bracket level is cut into *segments* at the points where nothing the
//! parser opened can still be open: `;`, `=>`, a `,` outside `<…>` and
//! closure parameters, the start of an item or statement after a closed
//! `{ … }`, and an attribute at such a start.
//!
//! - The recursion estimate of a point is its level's base (one more than
//!   the cost where the level's group opened), plus the recursive tokens
//!   and the unclosed `<` counted since its segment started. A `,` inside
//!   `<…>` goes back to the count where the innermost `<` opened; an
//!   `else` after a closed `{ … }` goes back to the count where its `if`
//!   was read. The estimate is the largest cost anywhere.
//! - The syntax tree depth of a level is the largest, over its segments, of
//!   the segment's tokens plus its deepest child group's depth; the file's
//!   is its top level's. It counts every token as a possible level of the
//!   tree, which no construct exceeds.
//!
//! Some tokens count only where they nest: a range where an operand starts
//! (`.. ..x`, not `'a'..='z'`), a `for` not followed by `<` (`for<'a>`
//! names lifetimes), an `=` that is neither a `let`'s nor an associated
//! type's (`Output = T`), an `if`, `while`, `match`, `for` or `let` that
//! does not start a statement (nor a `let` right after `if`, `while`, `&&`
//! or `||`), and a `::` only inside a `use`. Both estimates over-count
//! (`a < b` opens an angle, a block costs its group and its keyword) and
//! that is the safe direction: they must never under-count what `syn`
//! does.
//!
//! # Invariants
//! 1. The recursion estimate of a file is at least the nesting of its
//!    brackets and of each recursive construct above
//!    (`every_recursive_construct_counts_one_level_each`), and its syntax
//!    tree depth at least the length of each chain above
//!    (`every_chain_counts_one_level_per_link`).
//! 2. Ordinary code stays far below every limit
//!    (`this_workspaces_own_sources_are_far_below_every_limit`).
//! 3. A file at exactly a limit parses, is summarised and is dropped on a
//!    thread with the default stage stack, for every construct and chain,
//!    in debug and release builds
//!    (`a_file_at_the_limit_parses_on_the_configured_stack`,
//!    `a_chain_at_the_limit_parses_and_drops_on_the_configured_stack`),
//!    and one level more is refused.
//! 4. The walk stops as soon as a limit is passed: a million-token file of
//!    any shape is refused without walking the rest
//!    (`a_million_token_chain_of_every_shape_is_refused_typed`).

use std::fmt::Write as _;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree, token_stream};

/// The largest recursion estimate the Source stage accepts. Ordinary code
/// stays under 40; a generic type costs `syn` up to 64 KiB of stack per
/// level in a debug build and 8 KiB in release, so 128 levels need at most
/// 8 MiB, half the default stage stack.
pub const MAX_NESTING: usize = 128;

/// The largest syntax tree depth estimate the Source stage accepts. A
/// level of the tree costs at most about 700 bytes of stack to walk in a
/// debug build (a call's, under `syn::visit`) and 130 bytes to drop, so
/// 8 192 levels need under 6 MiB; ordinary code stays under a few hundred
/// (`docs/reliability.md`, "Hostile input").
pub const MAX_TREE_DEPTH: usize = 8192;

/// The most `mod name;`, `include!` and `path = "…"` shapes one file may
/// hold. The largest count in the cargo registry of this workspace is far
/// below it (`docs/reliability.md`, "Hostile input").
pub const MAX_DECLARATIONS: usize = 16_384;

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
    /// The file's syntax tree would be deeper than a stage may drop or walk
    /// (a chain of operators, calls, fields, casts or `else if`s).
    #[error(
        "builds a syntax tree {depth} levels deep (a chain of operators, calls, fields, casts or `else if`s), past the limit of {limit}: refused before parsing"
    )]
    TreeTooDeep {
        /// The estimate (the walk stops counting just past the limit).
        depth: usize,
        /// [`MAX_TREE_DEPTH`].
        limit: usize,
    },
    /// The file declares more files than one file may.
    #[error(
        "declares {declarations} files (`mod`, `include!`, `#[path]`), past the limit of {limit}: refused before parsing"
    )]
    TooManyDeclarations {
        /// How many were counted (the walk stops counting just past the
        /// limit).
        declarations: usize,
        /// [`MAX_DECLARATIONS`].
        limit: usize,
    },
}

/// What the guard measured of a file. Each figure is exact up to its limit
/// and stops just past it (the walk stops there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Estimate {
    /// How deep `syn` may recurse parsing it.
    pub(crate) recursion: usize,
    /// How deep its syntax tree may be.
    pub(crate) tree_depth: usize,
    /// Its `mod name;`, `include!` and `path = "…"` shapes.
    pub(crate) declarations: usize,
}

/// The figures past which a walk stops.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) recursion: usize,
    pub(crate) tree_depth: usize,
    pub(crate) declarations: usize,
}

impl Limits {
    /// The Source stage's limits.
    pub(crate) const STAGE: Self = Self {
        recursion: MAX_NESTING,
        tree_depth: MAX_TREE_DEPTH,
        declarations: MAX_DECLARATIONS,
    };

    /// No limit: the walk reads every token.
    #[cfg(test)]
    pub(crate) const NONE: Self = Self {
        recursion: usize::MAX,
        tree_depth: usize::MAX,
        declarations: usize::MAX,
    };

    fn passed_by(&self, estimate: &Estimate) -> bool {
        estimate.recursion > self.recursion
            || estimate.tree_depth > self.tree_depth
            || estimate.declarations > self.declarations
    }
}

/// Refuses `tokens` when they pass one of the Source stage's limits.
///
/// # Errors
/// [`NestingError::TooDeep`], [`NestingError::TreeTooDeep`] or
/// [`NestingError::TooManyDeclarations`], with the figure reached.
pub(crate) fn check(tokens: &TokenStream) -> Result<Estimate, NestingError> {
    let limits = Limits::STAGE;
    let found = estimate(tokens, &limits);
    if found.recursion > limits.recursion {
        Err(NestingError::TooDeep {
            depth: found.recursion,
            limit: limits.recursion,
        })
    } else if found.tree_depth > limits.tree_depth {
        Err(NestingError::TreeTooDeep {
            depth: found.tree_depth,
            limit: limits.tree_depth,
        })
    } else if found.declarations > limits.declarations {
        Err(NestingError::TooManyDeclarations {
            declarations: found.declarations,
            limit: limits.declarations,
        })
    } else {
        Ok(found)
    }
}

/// The identifiers the walk tells apart; every other one (a raw `r#if`
/// included) is [`Word::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    As,
    Become,
    Box,
    Break,
    Const,
    Dyn,
    Else,
    For,
    If,
    Impl,
    In,
    Let,
    Loop,
    Match,
    Move,
    Mut,
    Ref,
    Return,
    Static,
    Unsafe,
    Use,
    Where,
    While,
    Yield,
    Mod,
    Include,
    Path,
    Other,
}

impl Word {
    /// The word an identifier printed as `text` is (a raw one prints as
    /// `r#…` and is none).
    fn of(text: &str) -> Self {
        match text {
            "as" => Self::As,
            "become" => Self::Become,
            "box" => Self::Box,
            "break" => Self::Break,
            "const" => Self::Const,
            "dyn" => Self::Dyn,
            "else" => Self::Else,
            "for" => Self::For,
            "if" => Self::If,
            "impl" => Self::Impl,
            "in" => Self::In,
            "let" => Self::Let,
            "loop" => Self::Loop,
            "match" => Self::Match,
            "move" => Self::Move,
            "mut" => Self::Mut,
            "ref" => Self::Ref,
            "return" => Self::Return,
            "static" => Self::Static,
            "unsafe" => Self::Unsafe,
            "use" => Self::Use,
            "where" => Self::Where,
            "while" => Self::While,
            "yield" => Self::Yield,
            "mod" => Self::Mod,
            "include" => Self::Include,
            "path" => Self::Path,
            _ => Self::Other,
        }
    }

    /// Whether this is a keyword after which the next token is in prefix
    /// position (an operand starts there, so `-`, `&`, `|` there are
    /// prefix).
    fn is_not_operand(self) -> bool {
        !matches!(self, Self::Mod | Self::Include | Self::Path | Self::Other)
    }
}

/// How many of the `pending` punctuation characters the operator they
/// start with takes: Rust's multi-character operators, the longest first
/// (`<<=` before `<<` before `<`), and anything else one character at a
/// time. A slice pattern per operator: no text is built or compared.
fn operator_len(pending: &[char]) -> usize {
    match pending {
        ['<', '<', '=', ..] | ['>', '>', '=', ..] | ['.', '.', '.' | '=', ..] => 3,
        [':', ':', ..]
        | ['-', '>' | '=', ..]
        | ['=', '>' | '=', ..]
        | [
            '!' | '<' | '>' | '+' | '*' | '/' | '%' | '^' | '&' | '|',
            '=',
            ..,
        ]
        | ['&', '&', ..]
        | ['|', '|', ..]
        | ['<', '<', ..]
        | ['>', '>', ..]
        | ['.', '.', ..] => 2,
        _ => 1,
    }
}

/// What the token before mattered as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Previous {
    Other,
    /// `else`: an `if` after it continues a chain `syn` parses in a loop.
    Else,
    /// `if` or `while`: a `let` after it is their condition, not nested.
    Condition,
    /// `&&` or `||` between operands: a `let` after it is a `let` chain's.
    Logical,
    /// A `for` that was counted: a `<` after it opens lifetimes
    /// (`for<'a> Fn(&'a T)`), not a loop.
    For,
    /// `<` or, inside one, `,`: a name after it may be bound (`Output =`).
    ArgumentStart,
    /// A name just after [`Previous::ArgumentStart`]: an `=` after it binds
    /// an associated type, and nests nothing.
    BindingName,
}

/// How far a declaration's shape has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    None,
    /// `mod`
    Mod,
    /// `mod name`
    ModName,
    /// `include`
    Include,
    /// `path`
    Path,
    /// `path =`
    PathEquals,
}

/// Punctuation read but not yet split into operators: at most three
/// characters are kept, the longest operator.
#[derive(Debug, Default, Clone, Copy)]
struct Pending {
    chars: [char; 3],
    len: usize,
}

/// One bracket level of the walk.
struct Level {
    tokens: token_stream::IntoIter,
    pending: Pending,
    /// The recursion cost of being inside this level at all.
    base: usize,
    /// Recursive tokens counted since the segment started.
    run: usize,
    /// Per `<` not yet closed since the segment started, `run` when it
    /// opened (a `,` inside it goes back there).
    angles: Vec<usize>,
    /// `run` and the open angles where the current `if` chain was read
    /// (an `else` after a closed `{ … }` goes back there).
    if_chain: Option<(usize, usize)>,
    /// Inside a closure's parameters: a `,` separates nothing.
    closure_params: bool,
    /// A `let` was read and its `=` was not: that `=` is no assignment.
    let_pattern: bool,
    /// Inside a `use` declaration: every `::` nests.
    in_use: bool,
    /// The whole level is inside a `use` declaration's braces.
    use_level: bool,
    /// The previous token ends an operand (so a `-` after it is binary).
    after_operand: bool,
    /// The previous token is a literal, a closed group or `?`: a `<` after
    /// it compares or shifts, and opens nothing.
    after_value: bool,
    /// The previous token is a closed `{ … }`.
    after_block: bool,
    /// The previous token is a lifetime's quote.
    lifetime: bool,
    /// Nothing has been read since the level or its segment started (an
    /// item, a statement or an arm starts here).
    at_start: bool,
    /// An attribute started at the start of the segment: when its group
    /// closes, what follows starts again.
    attribute: bool,
    previous: Previous,
    shape: Shape,
    /// Tokens of the current segment.
    links: usize,
    /// The deepest child group of the current segment.
    deepest_child: usize,
    /// The deepest closed segment (links plus deepest child).
    deepest_segment: usize,
}

impl Level {
    fn new(tokens: TokenStream, base: usize, in_use: bool) -> Self {
        Self {
            tokens: tokens.into_iter(),
            pending: Pending::default(),
            base,
            run: 0,
            angles: Vec::new(),
            if_chain: None,
            closure_params: false,
            let_pattern: false,
            in_use,
            use_level: in_use,
            after_operand: false,
            after_value: false,
            after_block: false,
            lifetime: false,
            at_start: true,
            attribute: false,
            previous: Previous::Other,
            shape: Shape::None,
            links: 0,
            deepest_child: 0,
            deepest_segment: 0,
        }
    }

    fn cost(&self) -> usize {
        self.base + self.run + self.angles.len()
    }

    /// The syntax tree depth of the current segment.
    fn segment_depth(&self) -> usize {
        self.links + self.deepest_child
    }

    /// The syntax tree depth of the whole level, once it is read.
    fn tree_depth(&self) -> usize {
        self.deepest_segment.max(self.segment_depth())
    }

    /// Ends the segment: nothing opened in it is open past this point.
    fn separate(&mut self) {
        self.deepest_segment = self.tree_depth();
        self.links = 0;
        self.deepest_child = 0;
        self.run = 0;
        self.angles.clear();
        self.if_chain = None;
        self.closure_params = false;
        self.let_pattern = false;
        self.in_use = self.use_level;
        self.after_operand = false;
        self.after_value = false;
        self.at_start = true;
        self.attribute = false;
        self.previous = Previous::Other;
    }

    /// Reads a punctuation character; joined ones wait for the next.
    fn punct(&mut self, c: char, spacing: Spacing, found: &mut Estimate) {
        if self.pending.len == self.pending.chars.len() {
            self.split_one(found);
        }
        self.pending.chars[self.pending.len] = c;
        self.pending.len += 1;
        // A lifetime's quote is joined to the word after it.
        if spacing == Spacing::Alone || c == '\'' {
            self.flush(found);
        }
    }

    /// Reads every pending character as operators.
    fn flush(&mut self, found: &mut Estimate) {
        while self.pending.len > 0 {
            self.split_one(found);
        }
    }

    /// Reads the longest operator the pending characters start with.
    fn split_one(&mut self, found: &mut Estimate) {
        let pending = self.pending;
        let taken = operator_len(&pending.chars[..pending.len]);
        let left = |at: usize| pending.chars.get(at).copied().unwrap_or_default();
        self.pending = Pending {
            chars: [left(taken), left(taken + 1), '\0'],
            len: pending.len - taken,
        };
        self.operator(&pending.chars[..taken], found);
    }

    /// Reads one operator, as its characters.
    fn operator(&mut self, operator: &[char], found: &mut Estimate) {
        let prefix = !self.after_operand;
        let after_value = std::mem::take(&mut self.after_value);
        let after_block = std::mem::take(&mut self.after_block);
        let at_start = std::mem::take(&mut self.at_start);
        let attribute = std::mem::take(&mut self.attribute);
        let previous = std::mem::replace(&mut self.previous, Previous::Other);
        self.after_operand = false;
        let shape = std::mem::replace(&mut self.shape, Shape::None);
        match (shape, operator) {
            (Shape::ModName, [';']) | (Shape::Include, ['!']) => found.declarations += 1,
            (Shape::Path, ['=']) => self.shape = Shape::PathEquals,
            _ => {}
        }
        match operator {
            [';'] | ['=', '>'] => return self.separate(),
            [','] if self.angles.is_empty() && !self.closure_params => return self.separate(),
            [','] => {
                // A `,` between generic arguments ends what the argument
                // opened: back to where the innermost `<` opened.
                if let Some(&opened) = self.angles.last()
                    && !self.closure_params
                {
                    self.run = opened;
                    self.previous = Previous::ArgumentStart;
                }
            }
            ['#'] => {
                // An attribute (doc comments are attributes): at the start
                // of an item or a statement it ends what came before, and
                // what follows it starts again. Mid-expression it separates
                // nothing (`a = #[x] a = …` still counts every assignment).
                if at_start || after_block {
                    self.separate();
                    self.at_start = false;
                    self.attribute = true;
                }
                // Its `!` (`#![…]`) is no operator.
                self.after_operand = true;
            }
            ['!'] if attribute => {
                self.attribute = true;
                self.after_operand = true;
            }
            ['\''] => self.lifetime = true,
            ['?'] => {
                self.after_operand = true;
                self.after_value = true;
            }
            // A `let`'s own `=` nests nothing the `let` did not (counted
            // there when the `let` is nested).
            ['='] if std::mem::take(&mut self.let_pattern) => {}
            // `Add<Self, Output = Self>` binds a name (in a comparison,
            // `x < a = b = c` still counts every `=` but the first).
            ['='] if previous == Previous::BindingName && !self.angles.is_empty() => {}
            ['=']
            | ['+', '=']
            | ['-', '=']
            | ['*', '=']
            | ['/', '=']
            | ['%', '=']
            | ['^', '=']
            | ['&', '=']
            | ['|', '=']
            | ['<', '<', '=']
            | ['>', '>', '=']
            | ['-', '>']
            | ['@'] => self.run += 1,
            // A range nests only where an operand starts (`.. ..x`); after
            // one (`'a'..='z'`, `0..n`) it ends a chain of ranges.
            ['.', '.'] | ['.', '.', '.'] | ['.', '.', '='] if prefix => self.run += 1,
            ['<'] | ['<', '<'] if !after_value => {
                if previous == Previous::For {
                    // `for<'a>` names lifetimes: the `for` nests nothing.
                    self.run -= 1;
                }
                let opens = operator.len();
                self.angles.extend(std::iter::repeat_n(self.run, opens));
                self.previous = Previous::ArgumentStart;
            }
            ['>'] => {
                self.angles.pop();
            }
            ['>', '>'] => {
                self.angles.pop();
                self.angles.pop();
            }
            [':', ':'] if self.in_use => self.run += 1,
            ['-'] | ['!'] | ['*'] | ['&'] if prefix => self.run += 1,
            ['&', '&'] if prefix => self.run += 2,
            // A closure's parameters open at a prefix `|` and close at the
            // next; between them a `,` separates nothing.
            ['|'] | ['|', '|'] if self.closure_params => self.closure_params = false,
            ['&', '&'] | ['|', '|'] if !prefix => self.previous = Previous::Logical,
            ['|'] if prefix => {
                self.run += 1;
                self.closure_params = true;
            }
            ['|', '|'] if prefix => self.run += 1,
            _ => {}
        }
        self.links += operator.iter().map(|c| c.len_utf8()).sum::<usize>();
    }

    fn ident(&mut self, word: Word, found: &mut Estimate) {
        self.flush(found);
        let lifetime = std::mem::take(&mut self.lifetime);
        let after_block = std::mem::take(&mut self.after_block);
        self.after_value = false;
        // After a closed `{ … }`, a word other than these starts an item or
        // a statement: nothing before it is open.
        if after_block && !lifetime && !matches!(word, Word::Else | Word::As | Word::In) {
            self.separate();
        }
        let at_start = std::mem::take(&mut self.at_start);
        let previous = std::mem::replace(&mut self.previous, Previous::Other);
        self.attribute = false;
        self.links += 1;
        self.shape = match (self.shape, word) {
            (Shape::Mod, _) => Shape::ModName,
            (_, Word::Mod) => Shape::Mod,
            (_, Word::Include) => Shape::Include,
            (_, Word::Path) => Shape::Path,
            _ => Shape::None,
        };
        if lifetime {
            self.after_operand = false;
            return;
        }
        match word {
            Word::Else => {
                // `if … {} else if … {}` is parsed in a loop: back to the
                // depth where the chain's `if` was read.
                if after_block && let Some((run, angles)) = self.if_chain {
                    self.run = run;
                    self.angles.truncate(angles);
                }
                self.previous = Previous::Else;
            }
            Word::If => {
                if previous != Previous::Else {
                    if !at_start {
                        self.run += 1;
                    }
                    self.if_chain = Some((self.run, self.angles.len()));
                }
                self.previous = Previous::Condition;
            }
            Word::While => {
                if !at_start {
                    self.run += 1;
                }
                self.previous = Previous::Condition;
            }
            Word::Match if !at_start => self.run += 1,
            Word::For if !at_start => {
                self.run += 1;
                self.previous = Previous::For;
            }
            Word::Let => {
                self.let_pattern = true;
                if !at_start && !matches!(previous, Previous::Condition | Previous::Logical) {
                    self.run += 1;
                }
            }
            Word::Return | Word::Break | Word::Yield | Word::Become | Word::Box => self.run += 1,
            Word::Use => self.in_use = true,
            _ if previous == Previous::ArgumentStart => self.previous = Previous::BindingName,
            _ => {}
        }
        self.after_operand = !word.is_not_operand();
    }

    fn literal(&mut self, found: &mut Estimate) {
        self.flush(found);
        self.at_start = false;
        self.attribute = false;
        self.after_block = false;
        self.lifetime = false;
        self.after_operand = true;
        self.after_value = true;
        self.previous = Previous::Other;
        self.links += 1;
        self.shape = match self.shape {
            Shape::PathEquals => {
                found.declarations += 1;
                Shape::None
            }
            _ => Shape::None,
        };
    }

    /// A group opens here.
    fn open_group(&mut self, found: &mut Estimate) {
        self.flush(found);
        self.at_start = false;
        self.after_block = false;
        self.lifetime = false;
        self.previous = Previous::Other;
        self.shape = Shape::None;
        self.links += 1;
    }

    /// The group opened last closed, `depth` deep.
    fn close_group(&mut self, delimiter: Delimiter, depth: usize) {
        self.deepest_child = self.deepest_child.max(depth);
        if std::mem::take(&mut self.attribute) {
            // What an attribute is attached to starts here.
            self.at_start = true;
            self.after_operand = false;
            return;
        }
        // A closed group is an operand (`(a)`, `[1]`, `{ … }`). After a
        // `{ … }` a statement may start, and a `<` there opens a path
        // (`{} <T as A>::f()`): only `(…)` and `[…]` make it a comparison.
        self.after_operand = true;
        self.after_block = delimiter == Delimiter::Brace;
        self.after_value = !self.after_block;
    }
}

/// What the guard measures of `tokens` (see the module docs), stopping
/// as soon as one figure passes its limit in `limits`.
pub(crate) fn estimate(tokens: &TokenStream, limits: &Limits) -> Estimate {
    let mut found = Estimate::default();
    let mut name = String::new();
    let mut levels = vec![(Level::new(tokens.clone(), 0, false), Delimiter::None)];
    while let Some((level, _)) = levels.last_mut() {
        let Some(tree) = level.tokens.next() else {
            let Some((mut closed, delimiter)) = levels.pop() else {
                break;
            };
            closed.flush(&mut found);
            let depth = closed.tree_depth();
            found.tree_depth = found.tree_depth.max(depth);
            if let Some((outer, _)) = levels.last_mut() {
                outer.close_group(delimiter, depth);
                found.tree_depth = found.tree_depth.max(outer.segment_depth());
            }
            if limits.passed_by(&found) {
                break;
            }
            continue;
        };
        match tree {
            TokenTree::Group(group) => {
                level.open_group(&mut found);
                let cost = level.cost() + 1;
                found.recursion = found.recursion.max(cost);
                if limits.passed_by(&found) {
                    break;
                }
                let inner = Level::new(group.stream(), cost, level.in_use);
                levels.push((inner, group.delimiter()));
                continue;
            }
            TokenTree::Ident(ident) => {
                // One buffer for every identifier: no allocation per token.
                name.clear();
                let _ = write!(name, "{ident}");
                level.ident(Word::of(&name), &mut found);
            }
            TokenTree::Punct(punct) => level.punct(punct.as_char(), punct.spacing(), &mut found),
            TokenTree::Literal(_) => level.literal(&mut found),
        }
        found.recursion = found.recursion.max(level.cost());
        found.tree_depth = found.tree_depth.max(level.segment_depth());
        if limits.passed_by(&found) {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests;
