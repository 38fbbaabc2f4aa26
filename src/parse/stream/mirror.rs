//! The mirror of the stack of open elements (see the parent module): which elements are open,
//! as the HTML standard's tree builder would have them, with its commonest implied end tags;
//! where text goes (title, text, hidden, preformatted); what a start or end tag does to it. It
//! holds at most [`MAX_DEPTH`] elements and counts the ones opened past it. It reads the page
//! only where `lol_html`'s handlers report nothing: the end tags' names, and the gaps between
//! tokens for the stray end tags no handler saw ([`stray`]); it must never fail on what it
//! reads there.

use lol_html::html_content::{TextChunk, TextType};

use super::elements::{
    breaks_out_of_foreign, closes_in_scope, closes_p, intern, is_head_content,
    is_integration_point, is_scope_boundary, is_special, is_table_part,
};
use super::{Ended, Input, NAME_BUF, Place, Search};
use crate::parse::entities::{self, Mode, Nul};
use crate::parse::stray;
use crate::parse::{
    Collected, Href, MAX_DEPTH, MAX_TITLE_BYTES, TextBuilder, is_block, is_heading, is_hidden,
    is_preformatted,
};

/// An element on the mirror of the stack of open elements.
#[derive(Clone, Copy)]
pub(super) struct Open {
    pub(super) serial: u32,
    /// The tag name if it is one this module treats apart, else "".
    pub(super) name: &'static str,
    pub(super) html: bool,
    /// Counts in `in_head`: its text is not shown.
    pub(super) in_head: bool,
}

/// Everything the handlers share.
// The `seen_*` flags are the tree builder's own: which of the unique elements exist.
#[allow(clippy::struct_excessive_bools)]
#[derive(Default)]
pub(super) struct State {
    pub(super) out: Collected,
    pub(super) text: TextBuilder,
    /// The first HTML `<title>`'s text while it is open, and its serial.
    pub(super) title: Option<(u32, TextBuilder)>,
    pub(super) title_seen: bool,
    /// The mirror: never more than [`MAX_DEPTH`] elements.
    pub(super) open: Vec<Open>,
    /// Elements opened while the mirror was full and not closed yet: the mirror's top is not
    /// the current node while there are any. See [`State::start`].
    pub(super) flat: usize,
    /// Of those, the foreign ones (`<svg>`, `<math>` and what they hold).
    pub(super) flat_foreign: usize,
    /// An element was flattened: the mirror and `lol_html` may part from there on.
    pub(super) went_flat: bool,
    pub(super) next_serial: u32,
    pub(super) in_head: usize,
    pub(super) in_pre: usize,
    /// `<p>`s on the mirror: with none, a start tag that closes a `<p>` need not look for one.
    pub(super) open_p: usize,
    pub(super) in_template: usize,
    /// Inside an element whose content is never text (script, style, title ...).
    pub(super) in_hidden: usize,
    pub(super) seen_html: bool,
    pub(super) seen_head: bool,
    pub(super) seen_body: bool,
    /// What `lol_html`'s end tags cost so far.
    pub(super) search: Search,
    /// Raw text held back because a chunk ended inside a character reference.
    pub(super) pending: String,
    pub(super) pending_mode: Option<(Mode, Target)>,
    /// The page's text is not wanted ([`Text::Skip`]): only the title's text is kept.
    pub(super) skip_text: bool,
    /// End tags seen since the last token, in the order `lol_html` gave them.
    pub(super) ended: Vec<Ended>,
    /// Where the last token `lol_html` reported ends in the source (with the text only): what
    /// lies between it and the next is what reached no handler, stray end tags among it.
    pub(super) read: usize,
}

/// Where a run of text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Title,
    Text { preformatted: bool },
}

impl State {
    /// Closes the elements whose own end tags came since the last token, before anything
    /// else reads the mirror: the next start tag, text, or the end, which starts at `next` in
    /// the source. The end tags `lol_html` matched with no open element (a stray `</p>`,
    /// `</br>`) reached no handler: they are read from the source between the tokens that did
    /// ([`State::strays`]), in their place among the others.
    pub(super) fn settle(&mut self, input: Input<'_>, next: usize) {
        if !self.ended.is_empty() {
            let mut ended = std::mem::take(&mut self.ended);
            let mut rest = &ended[..];
            while let Some(first) = rest.first() {
                // The handlers one end tag called, innermost element first.
                let at = first.at.clone();
                let len = rest.iter().take_while(|e| e.at.start == at.start).count();
                self.strays(input, at.start);
                self.end_tag(input, &rest[..len]);
                self.read_to(at.end);
                rest = &rest[len..];
            }
            // Kept for its capacity: no allocation per end tag.
            ended.clear();
            self.ended = ended;
        }
        self.strays(input, next);
    }

    /// The source is read up to `end`: a token `lol_html` reported ends there.
    pub(super) fn read_to(&mut self, end: usize) {
        self.read = self.read.max(end);
    }

    /// Applies the stray end tags between what was read and `next` (see [`super::stray`]).
    /// Only the text's line breaks depend on them: without the text, nothing is read.
    fn strays(&mut self, input: Input<'_>, next: usize) {
        if next <= self.read || self.skip_text {
            return;
        }
        let from = self.read;
        self.read = next;
        if let Some(gap) = input.body.get(from..next) {
            for name in stray::end_tags(gap) {
                let mut buf = [0; NAME_BUF];
                if let Some(name) = stray::lowercase(name, &mut buf) {
                    self.end_named(intern(name));
                }
            }
        }
    }

    /// One end tag and the elements `lol_html` closed with it (`group`).
    fn end_tag(&mut self, input: Input<'_>, group: &[Ended]) {
        // Of `<p>`, the headings and the blocks that close in scope, html5ever closes the one
        // its rule names (the nearest `<p>` in button scope, the nearest heading of any rank,
        // the nearest `<div>` in scope), whichever `lol_html` closed.
        let mut by_name = false;
        for e in group {
            match e.place {
                Place::Mirror {
                    depth,
                    serial,
                    known,
                } => {
                    if by_name {
                        continue;
                    }
                    let own = input.end_tag_is(e.at.clone(), &e.name);
                    if own && (known == "p" || known == "li" || closes_in_scope(known)) {
                        by_name = true;
                        self.end_named(known);
                    } else if is_heading(known) && (own || input.end_tag_is_heading(e.at.clone())) {
                        by_name = true;
                        self.end_named("h1");
                    } else if own {
                        self.end(depth, serial, known);
                    }
                }
                Place::Merged => {}
                Place::Flat(o) => {
                    // A flattened `<p>` (heading) closed by `</p>` (a heading's end tag) was
                    // the one its rule closes: the mirror's stay open.
                    if !by_name && (o.name == "p" || is_heading(o.name)) {
                        by_name = if o.name == "p" {
                            input.end_tag_is(e.at.clone(), "p")
                        } else {
                            input.end_tag_is_heading(e.at.clone())
                        };
                    }
                    self.flush();
                    self.flat -= 1;
                    if !o.html {
                        self.flat_foreign -= 1;
                    }
                    self.close(o);
                }
            }
        }
    }

    /// A start tag. Returns where the element went (it can have content), for its end tag.
    ///
    /// Past [`MAX_DEPTH`] open elements the mirror is full and the element is flattened, as
    /// Chromium's tree builder attaches elements past its 512 to the current node's parent:
    /// it is counted, not pushed, and stays open until `lol_html` closes it (its own end tag,
    /// or another that closes an element it is inside). Its links and text are collected and
    /// its hidden content stays hidden, as on the mirror. While flattened elements are open
    /// the mirror's top is not the current node, so the implied end tags, which read the
    /// mirror from its top, wait until they are closed: past the cap `<p>one<p>two` keeps both
    /// open (the line breaks come out the same), and a page of unclosed elements there grows
    /// only `lol_html`'s own stack, which its memory limit bounds.
    pub(super) fn start(
        &mut self,
        name: &str,
        lol_html_says_html: bool,
        can_have_content: bool,
        agent: &str,
        attr: impl Fn(&str) -> Option<String>,
        href: impl Fn(&str) -> Option<Href>,
    ) -> Option<Place> {
        self.flush();
        let known = intern(name);
        // In foreign content html5ever decides: a few HTML tags break out of it, the rest are
        // foreign (`lol_html` gives an SVG <title> the HTML namespace of its content, and a <p>
        // in <svg> the SVG one). Past the cap, where no break-out pops anything, `lol_html`
        // decides, unless an element below is foreign.
        let html = match self.open.last() {
            _ if self.flat > 0 => lol_html_says_html && self.flat_foreign == 0,
            Some(top) if !top.html && !is_integration_point(top.name) => {
                breaks_out_of_foreign(name)
            }
            _ => lol_html_says_html,
        };
        if html {
            // A second <html>, <head> or <body> adds nothing to the tree: html5ever merges its
            // attributes or ignores it.
            let again = match known {
                "html" => std::mem::replace(&mut self.seen_html, true),
                "head" => std::mem::replace(&mut self.seen_head, true) || self.seen_body,
                "body" | "frameset" => std::mem::replace(&mut self.seen_body, true),
                _ => false,
            };
            if again {
                return can_have_content.then_some(Place::Merged);
            }
            if !is_head_content(known) && known != "html" {
                self.seen_body = true;
            }
            if self.flat == 0 {
                self.implied_ends(known);
            }
        }
        if self.in_template == 0 && self.in_hidden == 0 {
            if known == "title" {
                // Only the first HTML title counts, as in a browser, even if it is blank;
                // an SVG icon's <title> is not the page's.
                if html && !self.title_seen && can_have_content {
                    self.title_seen = true;
                    self.title = Some((self.next_serial, TextBuilder::default()));
                }
            } else {
                self.out.element(agent, name, attr, href);
            }
        }
        if self.in_hidden == 0 {
            self.boundary(known);
        }
        if !can_have_content {
            return None;
        }
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let depth = self.open.len();
        // Before the body, html5ever puts <noframes> in the head, whose text is not shown.
        let in_head = known == "head" || (known == "noframes" && !self.seen_body);
        let open = Open {
            serial,
            name: known,
            html,
            in_head,
        };
        if in_head {
            self.in_head += 1;
        }
        match known {
            "template" => self.in_template += 1,
            "p" => self.open_p += 1,
            _ if is_preformatted(known) => self.in_pre += 1,
            _ => {}
        }
        if is_hidden(known) && known != "template" {
            self.in_hidden += 1;
        }
        if depth >= MAX_DEPTH {
            self.flat += 1;
            self.went_flat = true;
            if !html {
                self.flat_foreign += 1;
            }
            return Some(Place::Flat(open));
        }
        self.open.push(open);
        debug_assert!(self.open.len() <= MAX_DEPTH, "the mirror is bounded");
        Some(Place::Mirror {
            depth,
            serial,
            known,
        })
    }

    /// The end tag of the element `known` pushed at `depth` with `serial`.
    fn end(&mut self, depth: usize, serial: u32, known: &str) {
        self.flush();
        if self.open.get(depth).is_some_and(|o| o.serial == serial) {
            // html5ever's "any other end tag": an element that is not special (a <span>, a
            // <b>) is not closed past a special one (a <div>, a <p>) opened inside it.
            if is_special(known) || !self.open[depth + 1..].iter().any(|o| is_special(o.name)) {
                self.pop_to(depth);
            }
        }
    }

    /// An end tag `known` as html5ever's "in body" rules read it by its name alone, for the
    /// end tags `lol_html` matched with no open element (its stack and the mirror part where
    /// the mirror closed an element early, or kept one `lol_html` closed) and for those of
    /// `<p>`, the headings, `<li>` and the blocks that close in scope. The tags whose rule moves nodes (the formatting elements' adoption
    /// agency, `</form>`) are left as `lol_html` leaves them; so are end tags with no rule of
    /// their own here.
    fn end_named(&mut self, known: &str) {
        self.flush();
        // Once past the cap the tree may hold open an element the stream flattened and
        // `lol_html` closed since: an end tag of a block that closes nothing on the mirror
        // still breaks the line (a break too many splits a line, one too few would join two
        // words).
        let went_flat = self.went_flat;
        let keeps_break = |known: &str| went_flat && is_block(known) && known != "body";
        if self.flat > 0 || self.in_hidden > 0 || self.in_head > 0 {
            // The mirror's top is not the current node (past the cap), or the text is hidden.
            if self.in_hidden == 0 && self.in_template == 0 && keeps_break(known) {
                self.boundary(known);
            }
            return;
        }
        if matches!(known, "br" | "p") {
            // Both end foreign content, as their start tags do.
            self.leave_foreign();
            if self.open.last().is_some_and(|o| is_table_part(o.name)) {
                // In a table, not in a cell: html5ever puts the `<br>` (the empty `<p>`)
                // before the table, where the table's own line break already is.
                return;
            }
        }
        let closed = match known {
            "p" => self.close_in_scope(&["p"], &["button"]),
            _ if is_heading(known) => {
                self.close_in_scope(&["h1", "h2", "h3", "h4", "h5", "h6"], &[])
            }
            "li" => self.close_in_scope(&["li"], &["ol", "ul"]),
            _ if closes_in_scope(known) => self.close_in_scope(&[known], &[]),
            // A table's parts close in table scope (a cell inside closes with them).
            _ if is_table_part(known) || matches!(known, "td" | "th" | "caption") => {
                self.close_in_table_scope(known)
            }
            // Closes the nearest template, whatever is open inside it.
            "template" => match self
                .open
                .iter()
                .rposition(|o| o.html && o.name == "template")
            {
                Some(depth) => {
                    self.pop_to(depth);
                    true
                }
                None => false,
            },
            _ => false,
        };
        // `</br>` is "a `br` start tag", and a `</p>` that closed nothing an empty paragraph
        // (in a template's content, which the tree parser's text leaves out).
        if self.in_template == 0
            && (known == "br" || (!closed && (known == "p" || keeps_break(known))))
        {
            self.boundary(known);
        }
    }

    /// The implied end tags the HTML standard's "in body" rules give a start tag `known`, for
    /// the elements that are commonly left open.
    fn implied_ends(&mut self, known: &str) {
        let Some(top) = self.open.last() else { return };
        if top.html && top.name == "head" && !is_head_content(known) {
            self.pop_to(self.open.len() - 1);
        } else {
            self.leave_foreign();
        }
        match known {
            _ if is_heading(known)
                && self
                    .open
                    .last()
                    .is_some_and(|o| o.html && is_heading(o.name)) =>
            {
                self.pop_to(self.open.len() - 1);
            }
            "li" => self.close_list_item(&["li"]),
            "dd" | "dt" => self.close_list_item(&["dd", "dt"]),
            "td" | "th" => {
                self.close_in_scope(&["td", "th"], &["table"]);
            }
            "tr" => {
                self.close_in_scope(&["tr"], &["table"]);
            }
            "tbody" | "thead" | "tfoot" => {
                self.close_in_scope(&["tbody", "thead", "tfoot"], &["table"]);
            }
            "option" | "optgroup" if self.open.last().is_some_and(|o| o.name == "option") => {
                self.pop_to(self.open.len() - 1);
            }
            // A link or a <nobr> inside one of its own kind closes it first, and a button
            // closes an open button: a page of unclosed <a>s is a list of links, not a nesting
            // 600 deep (audit 24).
            "button" => {
                self.close_in_scope(&["button"], &[]);
            }
            "a" | "nobr" => self.close_formatting(known),
            _ => {}
        }
        if closes_p(known) && self.open_p > 0 {
            self.close_in_scope(&["p"], &["button"]);
        }
    }

    /// A `<li>` (`<dd>`, `<dt>`) start tag closes the nearest open one of `names` unless a
    /// special element other than `<address>`, `<div>` and `<p>` comes first (a `<li>` in an
    /// `<h2>` in a `<li>` nests).
    fn close_list_item(&mut self, names: &[&str]) {
        for (depth, o) in self.open.iter().enumerate().rev() {
            if !o.html {
                return;
            }
            if names.contains(&o.name) {
                self.pop_to(depth);
                return;
            }
            if is_special(o.name) && !matches!(o.name, "address" | "div" | "p") {
                return;
            }
        }
    }

    /// Pops the foreign elements (`<svg>`, `<math>` and what they hold) off the top of the
    /// mirror, down to an HTML element or an integration point.
    fn leave_foreign(&mut self) {
        while self
            .open
            .last()
            .is_some_and(|o| !o.html && !is_integration_point(o.name))
        {
            self.pop_to(self.open.len() - 1);
        }
    }

    /// The adoption agency's simple case: pops to the nearest open formatting element `known`
    /// when only elements that are not special (a <span>, a <b>) were opened inside it. With a
    /// block in between (`<a><div><a>`) html5ever moves nodes; the mirror leaves it open.
    fn close_formatting(&mut self, known: &str) {
        for (depth, o) in self.open.iter().enumerate().rev() {
            if o.html && o.name == known {
                self.pop_to(depth);
                return;
            }
            if !o.html || is_special(o.name) {
                return;
            }
        }
    }

    /// Pops to the nearest open element named one of `names`, unless a scope boundary (or one
    /// of `stop`) comes first; whether it found one.
    fn close_in_scope(&mut self, names: &[&str], stop: &[&str]) -> bool {
        for (depth, o) in self.open.iter().enumerate().rev() {
            if !o.html {
                return false;
            }
            if names.contains(&o.name) {
                self.pop_to(depth);
                return true;
            }
            if stop.contains(&o.name) || is_scope_boundary(o.name) {
                return false;
            }
        }
        false
    }

    /// Pops to the nearest open element `known` unless a table or template comes first (the
    /// HTML standard's "table scope").
    fn close_in_table_scope(&mut self, known: &str) -> bool {
        for (depth, o) in self.open.iter().enumerate().rev() {
            if !o.html {
                return false;
            }
            if o.name == known {
                self.pop_to(depth);
                return true;
            }
            if matches!(o.name, "html" | "table" | "template") {
                return false;
            }
        }
        false
    }

    /// Closes the elements from the top of the mirror down to `depth`, each as the tree walk
    /// closes it.
    fn pop_to(&mut self, depth: usize) {
        // Elements on the mirror close only when no flattened one is open: their own end tags
        // close those first (`lol_html` closes everything inside), and the implied end tags
        // wait for them.
        debug_assert!(
            self.flat == 0 || depth >= self.open.len(),
            "flattened ones open"
        );
        while self.open.len() > depth {
            let Some(o) = self.open.pop() else { return };
            self.close(o);
        }
    }

    /// Closes `o`, off the mirror or flattened, as the tree walk closes an element.
    fn close(&mut self, o: Open) {
        if o.in_head {
            self.in_head -= 1;
        }
        match o.name {
            "template" => self.in_template -= 1,
            "p" => self.open_p -= 1,
            name if is_preformatted(name) => self.in_pre -= 1,
            _ => {}
        }
        if is_hidden(o.name) && o.name != "template" {
            self.in_hidden -= 1;
        }
        if self.in_hidden == 0 {
            self.boundary(o.name);
        }
        if self.title.as_ref().is_some_and(|(s, _)| *s == o.serial)
            && let Some((_, title)) = self.title.take()
        {
            let title = crate::parse::cap_title(title.finish());
            self.out.title = (!title.is_empty()).then_some(title);
        }
    }

    pub(super) fn text(&mut self, chunk: &TextChunk<'_>) {
        let raw = chunk.as_str();
        if self.flat == 0
            && let Some(top) = self.open.last()
            && top.html
            && top.name == "head"
            && raw
                .bytes()
                .any(|b| !matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' '))
        {
            // Text in <head> ends it (html5ever moves on to the body).
            self.pop_to(self.open.len() - 1);
            self.seen_body = true;
        }
        let target = if self.title.is_some() && self.in_hidden == 1 {
            Target::Title
        } else if self.in_hidden > 0 || self.in_template > 0 || self.in_head > 0 || self.skip_text {
            self.pending.clear();
            return;
        } else {
            Target::Text {
                preformatted: self.in_pre > 0,
            }
        };
        let mode = match chunk.text_type() {
            TextType::Data => Mode {
                refs: true,
                in_attribute: false,
                nul: Nul::Drop,
            },
            TextType::RCData => Mode {
                refs: true,
                in_attribute: false,
                nul: Nul::Replace,
            },
            _ => Mode {
                refs: false,
                in_attribute: false,
                nul: Nul::Replace,
            },
        };
        if self.pending_mode.is_some_and(|m| m != (mode, target)) {
            self.flush();
        }
        if self.pending.is_empty() {
            // The common case: nothing held back, and the chunk cuts no reference or CR/LF
            // pair, so it is decoded where it lies instead of through `pending`.
            let end = if chunk.last_in_text_node() {
                raw.len()
            } else {
                entities::safe_end(raw)
            };
            if end == raw.len() {
                self.pending_mode = None;
                let decoded = entities::decode(raw, mode);
                deliver(&mut self.title, &mut self.text, &decoded, target);
                return;
            }
        }
        self.pending.push_str(raw);
        self.pending_mode = Some((mode, target));
        let end = if chunk.last_in_text_node() {
            self.pending.len()
        } else {
            entities::safe_end(&self.pending)
        };
        self.emit(end);
    }

    /// A line break or space in the text where an element opens or closes, if the text is
    /// wanted.
    fn boundary(&mut self, name: &str) {
        if !self.skip_text {
            self.text.boundary(name);
        }
    }

    /// Sends everything held back on (at a tag or the end, no reference goes on).
    fn flush(&mut self) {
        self.emit(self.pending.len());
    }

    fn emit(&mut self, end: usize) {
        let Some((mode, target)) = self.pending_mode else {
            return;
        };
        if end == 0 {
            return;
        }
        let decoded = entities::decode(&self.pending[..end], mode);
        deliver(&mut self.title, &mut self.text, &decoded, target);
        drop(decoded);
        self.pending.drain(..end);
        if self.pending.is_empty() {
            self.pending_mode = None;
        }
    }

    pub(super) fn finish(mut self) -> Collected {
        self.flush();
        // Of the flattened elements left open, only a title still matters at the end.
        if self.flat > 0
            && let Some((serial, _)) = self.title
        {
            self.close(Open {
                serial,
                name: "title",
                html: true,
                in_head: false,
            });
        }
        self.flat = 0;
        self.pop_to(0);
        self.out.text = self.text.finish();
        self.out
    }
}

/// Adds decoded text to the title or the page's text.
fn deliver(
    title: &mut Option<(u32, TextBuilder)>,
    text: &mut TextBuilder,
    decoded: &str,
    target: Target,
) {
    match target {
        Target::Title => {
            if let Some((_, title)) = title {
                title.push_capped(decoded, MAX_TITLE_BYTES);
            }
        }
        Target::Text { preformatted } => text.push(decoded, preformatted),
    }
}
