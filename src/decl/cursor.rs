//! A cursor over one statement's tokens. It wraps sqlparser's `Parser` so that standard SQL
//! (queries) can be handed to it directly, while the anonymization statements are read with
//! small helpers that turn every mismatch into a positioned, actionable [`DeclError`].

use sqlparser::ast::Query;
use sqlparser::dialect::Dialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use super::DeclError;
use crate::policy::Pos;

/// Longest token text quoted back in an error; a whole pasted paragraph helps nobody.
const MAX_FOUND_CHARS: usize = 40;

pub(super) fn pos(loc: Location) -> Pos {
    Pos {
        line: loc.line,
        column: loc.column,
    }
}

/// The tokens of one `;`-terminated statement, with what errors need to know about its edges.
pub(super) struct StatementTokens {
    /// Including whitespace and comments, ending with an EOF token placed at `end`.
    pub tokens: Vec<TokenWithSpan>,
    /// Start of the first significant token.
    pub start: Location,
    /// End (exclusive) of the last significant token.
    pub last_end: Location,
    /// Where "found the end of the statement" errors point: the `;`, or just past the last token.
    pub end: Location,
    /// How that end is described to the user.
    pub end_desc: &'static str,
}

/// A literal in a value position (`SET`, `ANONYMIZE ... WITH`, hierarchy rows).
#[derive(Debug, Clone)]
pub(super) enum Lit {
    /// The number and its text as written (sign included).
    Number(f64, String),
    /// A quoted string, unquoted.
    Text(String),
    /// A bare or quoted identifier.
    Word(String),
}

impl Lit {
    pub fn into_text(self) -> String {
        match self {
            Lit::Number(_, text) | Lit::Text(text) | Lit::Word(text) => text,
        }
    }
}

pub(super) struct Cursor<'a> {
    parser: Parser<'a>,
    pub start: Pos,
    pub last_end: Location,
    end: Pos,
    end_desc: &'static str,
}

impl<'a> Cursor<'a> {
    pub fn new(dialect: &'a dyn Dialect, stmt: StatementTokens) -> Self {
        Cursor {
            parser: Parser::new(dialect).with_tokens_with_locations(stmt.tokens),
            start: pos(stmt.start),
            last_end: stmt.last_end,
            end: pos(stmt.end),
            end_desc: stmt.end_desc,
        }
    }

    pub fn peek(&self) -> &TokenWithSpan {
        self.parser.peek_token_ref()
    }

    /// Where the next token starts; the statement's end for EOF, whose own span may be empty.
    pub fn peek_pos(&self) -> Pos {
        let t = self.peek();
        if t.token == Token::EOF || t.span.start.line == 0 {
            self.end
        } else {
            pos(t.span.start)
        }
    }

    pub fn peek_loc(&self) -> Location {
        self.peek().span.start
    }

    pub fn at_end(&self) -> bool {
        self.peek().token == Token::EOF
    }

    fn bump(&mut self) {
        self.parser.advance_token();
    }

    /// How the next token is quoted back to the user in "found ..." clauses.
    pub fn found(&self) -> String {
        describe(&self.peek().token, self.end_desc)
    }

    /// An error at the next token: "expected {what}, found {token}".
    pub fn expected(&self, what: &str) -> DeclError {
        DeclError::new(
            self.peek_pos(),
            format!("expected {what}, found {}", self.found()),
        )
    }

    /// Whether the next token is the unquoted word `kw` (any case). Quoted identifiers never
    /// match, so `"label"` stays usable as a name.
    pub fn is_kw(&self, kw: &str) -> bool {
        match &self.peek().token {
            Token::Word(w) => w.quote_style.is_none() && w.value.eq_ignore_ascii_case(kw),
            _ => false,
        }
    }

    pub fn eat_kw(&mut self, kw: &str) -> bool {
        let hit = self.is_kw(kw);
        if hit {
            self.bump();
        }
        hit
    }

    pub fn expect_kw(&mut self, kw: &str, what: &str) -> Result<Pos, DeclError> {
        let at = self.peek_pos();
        if self.eat_kw(kw) {
            Ok(at)
        } else {
            Err(self.expected(what))
        }
    }

    pub fn is(&self, token: &Token) -> bool {
        &self.peek().token == token
    }

    pub fn eat(&mut self, token: &Token) -> bool {
        let hit = self.is(token);
        if hit {
            self.bump();
        }
        hit
    }

    pub fn expect(&mut self, token: &Token, what: &str) -> Result<Pos, DeclError> {
        let at = self.peek_pos();
        if self.eat(token) {
            Ok(at)
        } else {
            Err(self.expected(what))
        }
    }

    /// An identifier, quoted or not. Keywords are accepted too: every position in this
    /// grammar is fixed, so there is no ambiguity, and users should not have to quote
    /// a column called `name` or `year`.
    pub fn ident(&mut self, what: &str) -> Result<(String, Pos), DeclError> {
        let at = self.peek_pos();
        match &self.peek().token {
            Token::Word(w) => {
                let value = w.value.clone();
                self.bump();
                Ok((value, at))
            }
            _ => Err(self.expected(what)),
        }
    }

    /// `( ident [, ident ...] )`, returning the names and the position of `(`.
    /// A name listed twice is an error: keys with repeated columns are always a typo.
    pub fn ident_list(&mut self, what: &str) -> Result<(Vec<String>, Pos), DeclError> {
        let open = self.expect(&Token::LParen, &format!("'(' and {what}"))?;
        let mut names: Vec<String> = Vec::new();
        loop {
            let (name, at) = self.ident(&format!("a column name in {what}"))?;
            if names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                return Err(DeclError::new(
                    at,
                    format!("column '{name}' is listed twice in {what}; list each column once"),
                ));
            }
            names.push(name);
            if !self.eat(&Token::Comma) {
                break;
            }
        }
        self.expect(&Token::RParen, &format!("',' or ')' in {what}"))?;
        Ok((names, open))
    }

    /// A quoted string literal.
    pub fn string(&mut self, what: &str) -> Result<(String, Pos), DeclError> {
        let at = self.peek_pos();
        match &self.peek().token {
            Token::SingleQuotedString(s) => {
                let s = s.clone();
                self.bump();
                Ok((s, at))
            }
            _ => Err(self.expected(what)),
        }
    }

    /// A number with an optional sign, as a value and as written.
    pub fn number(&mut self, what: &str) -> Result<(f64, String, Pos), DeclError> {
        let at = self.peek_pos();
        match self.try_number()? {
            Some((n, text)) => Ok((n, text, at)),
            None => Err(self.expected(what)),
        }
    }

    /// Consumes a signed number if one is next; leaves the cursor alone otherwise.
    fn try_number(&mut self) -> Result<Option<(f64, String)>, DeclError> {
        let sign = match &self.peek().token {
            Token::Minus => "-",
            Token::Plus => "+",
            _ => "",
        };
        let digits = if sign.is_empty() {
            self.peek()
        } else {
            self.parser.peek_nth_token_ref(1)
        };
        let (digits, at) = match &digits.token {
            Token::Number(n, _) => (n.clone(), pos(digits.span.start)),
            _ => return Ok(None),
        };
        let text = if sign == "-" {
            format!("-{digits}")
        } else {
            digits.clone()
        };
        let value: f64 = text.parse().map_err(|_| {
            DeclError::new(
                at,
                format!("'{digits}' is not a number this parser understands; write plain decimal digits such as 5 or 0.25"),
            )
        })?;
        if !value.is_finite() {
            return Err(DeclError::new(
                at,
                format!(
                    "'{digits}' is too large; write a number within the range of a 64-bit float"
                ),
            ));
        }
        if !sign.is_empty() {
            self.bump();
        }
        self.bump();
        Ok(Some((value, text)))
    }

    /// A number, a quoted string, or a (possibly quoted) word.
    pub fn literal(&mut self, what: &str) -> Result<(Lit, Pos), DeclError> {
        let at = self.peek_pos();
        if let Some((n, text)) = self.try_number()? {
            return Ok((Lit::Number(n, text), at));
        }
        let lit = match &self.peek().token {
            Token::SingleQuotedString(s) => Lit::Text(s.clone()),
            Token::Word(w) => Lit::Word(w.value.clone()),
            _ => return Err(self.expected(what)),
        };
        self.bump();
        Ok((lit, at))
    }

    /// A standard SQL query, handed to sqlparser.
    pub fn query(&mut self, context: &str) -> Result<Box<Query>, DeclError> {
        let at = self.peek_pos();
        self.parser
            .parse_query()
            .map_err(|e| parser_error(e, at, context, self.end_desc))
    }

    /// Requires the statement to be over.
    pub fn end(&self, statement: &str) -> Result<(), DeclError> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.expected(&format!("';' to end the {statement} statement")))
        }
    }
}

/// A token as quoted back to the user.
pub(super) fn describe(token: &Token, end_desc: &str) -> String {
    let text = match token {
        Token::EOF => return end_desc.to_string(),
        Token::Word(w) => match w.quote_style {
            // Spelled out rather than through `Word`'s Display, which panics on
            // quote styles it does not know.
            Some(q) => {
                let close = if q == '[' { ']' } else { q };
                format!("{q}{}{close}", w.value)
            }
            None => w.value.clone(),
        },
        Token::SingleQuotedString(s) => return format!("the string '{}'", shorten(s)),
        other => other.to_string(),
    };
    format!("'{}'", shorten(&text))
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= MAX_FOUND_CHARS {
        s.to_string()
    } else {
        let head: String = s.chars().take(MAX_FOUND_CHARS).collect();
        format!("{head}...")
    }
}

/// sqlparser reports positions only inside its message (" at Line: l, Column: c"); recover
/// them so query errors point where the others do.
fn parser_error(e: ParserError, fallback: Pos, context: &str, end_desc: &str) -> DeclError {
    let raw = match e {
        ParserError::ParserError(m) | ParserError::TokenizerError(m) => m,
        ParserError::RecursionLimitExceeded => {
            return DeclError::new(
                fallback,
                format!("{context} nests too deeply; flatten the subqueries or move some into a CREATE VIEW"),
            )
        }
    };
    let (msg, at) = match raw.rsplit_once(" at Line: ") {
        Some((msg, rest)) => (msg.to_string(), location_in(rest).unwrap_or(fallback)),
        None => (raw, fallback),
    };
    // Match the wording of this module's own errors.
    let msg = lower_first(&msg)
        .replace("expected: ", "expected ")
        .replace(", found: EOF", &format!(", found {end_desc}"))
        .replace(", found: ", ", found ");
    DeclError::new(
        at,
        format!(
            "{context} is not a valid SQL query: {msg}; write a SELECT (or WITH ... SELECT) query"
        ),
    )
}

fn location_in(rest: &str) -> Option<Pos> {
    let (line, column) = rest.split_once(", Column: ")?;
    let line: u64 = line.trim().parse().ok()?;
    let column: u64 = column.trim().parse().ok()?;
    (line > 0).then_some(Pos { line, column })
}

pub(super) fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Byte offsets of each line start, to cut source text out by token location.
pub(super) struct LineIndex<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    pub fn new(text: &'t str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// The byte offset of a 1-based (line, column in characters) location, as the tokenizer
    /// counts them: only `\n` starts a line, every other character is one column.
    pub fn offset(&self, loc: Location) -> Option<usize> {
        let line = usize::try_from(loc.line).ok()?.checked_sub(1)?;
        let column = usize::try_from(loc.column).ok()?.checked_sub(1)?;
        let start = *self.starts.get(line)?;
        let rest = self.text.get(start..)?;
        match rest.char_indices().nth(column) {
            Some((i, _)) => Some(start + i),
            // One past the last character of the text.
            None if rest.chars().count() == column => Some(self.text.len()),
            None => None,
        }
    }

    pub fn slice(&self, from: Location, to: Location) -> Option<&'t str> {
        let a = self.offset(from)?;
        let b = self.offset(to)?;
        self.text.get(a..b)
    }
}
