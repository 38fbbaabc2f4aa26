//! The HTML standard's element lists the mirror ([`super::mirror`]) follows: special
//! elements, what ends a `<p>` or `<head>`, scope boundaries, integration points. Names only:
//! nothing here holds state.

use crate::parse::is_heading;

/// The names this module treats apart, as `&'static str`; anything else is "".
macro_rules! known_names {
    ($($name:literal)*) => {
        pub(super) fn intern(name: &str) -> &'static str {
            match name {
                $($name => $name,)*
                _ => "",
            }
        }
    };
}

known_names! {
    "address" "annotation-xml" "applet" "article" "aside" "blockquote" "body" "br" "button"
    "caption" "center" "dd" "desc" "details" "dialog" "dir" "div" "dl" "dt" "fieldset"
    "figcaption" "figure" "footer" "foreignobject" "form" "frameset" "h1" "h2" "h3" "h4" "h5"
    "h6" "head" "header" "hgroup" "hr" "html" "iframe" "legend" "li" "listing" "main" "marquee"
    "menu" "mi" "mn" "mo" "ms" "mtext" "nav" "noscript" "object" "ol" "optgroup" "option" "p"
    "plaintext" "pre" "script" "search" "section" "style" "summary" "table" "tbody" "td"
    "template" "tfoot" "th" "thead" "title" "tr" "ul" "xmp" "base" "link" "meta" "noframes"
    "basefont" "a" "nobr"
}

/// The HTML standard's "special" elements, among the names kept here.
pub(super) fn is_special(known: &str) -> bool {
    !matches!(
        known,
        "" | "a" | "dialog" | "legend" | "nobr" | "optgroup" | "option"
    )
}

/// Elements that may stay in `<head>`; any other start tag ends it.
pub(super) fn is_head_content(known: &str) -> bool {
    matches!(
        known,
        "base"
            | "basefont"
            | "link"
            | "meta"
            | "title"
            | "noscript"
            | "noframes"
            | "style"
            | "script"
            | "template"
            | "head"
    )
}

/// Start tags that close an open `<p>` (in button scope).
pub(super) fn closes_p(known: &str) -> bool {
    is_heading(known)
        || matches!(
            known,
            "address"
                | "article"
                | "aside"
                | "blockquote"
                | "center"
                | "details"
                | "dialog"
                | "dir"
                | "div"
                | "dl"
                | "fieldset"
                | "figcaption"
                | "figure"
                | "footer"
                | "header"
                | "hgroup"
                | "main"
                | "menu"
                | "nav"
                | "ol"
                | "p"
                | "search"
                | "section"
                | "summary"
                | "ul"
                | "pre"
                | "listing"
                | "form"
                | "plaintext"
                | "hr"
                | "xmp"
                | "li"
                | "dd"
                | "dt"
        )
}

/// End tags that close the element of their name if it is in scope, and are ignored if not
/// ("in body"; `</p>`, `</li>` and the headings have rules of their own).
pub(super) fn closes_in_scope(known: &str) -> bool {
    matches!(
        known,
        "address"
            | "applet"
            | "article"
            | "aside"
            | "blockquote"
            | "button"
            | "center"
            | "dd"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "header"
            | "hgroup"
            | "listing"
            | "main"
            | "marquee"
            | "menu"
            | "nav"
            | "object"
            | "ol"
            | "pre"
            | "search"
            | "section"
            | "summary"
            | "ul"
    )
}

/// The parts of a table whose text is not in a cell: html5ever moves what is put there.
pub(super) fn is_table_part(known: &str) -> bool {
    matches!(known, "table" | "tbody" | "thead" | "tfoot" | "tr")
}

/// The HTML standard's "has an element in scope" boundaries.
pub(super) fn is_scope_boundary(known: &str) -> bool {
    matches!(
        known,
        "applet" | "caption" | "html" | "table" | "td" | "th" | "marquee" | "object" | "template"
    )
}

/// Foreign elements whose content is HTML again.
pub(super) fn is_integration_point(known: &str) -> bool {
    matches!(
        known,
        "foreignobject" | "desc" | "title" | "annotation-xml" | "mi" | "mo" | "mn" | "ms" | "mtext"
    )
}

/// HTML start tags that end foreign content (`<font>` with attributes too, not kept here).
pub(super) fn breaks_out_of_foreign(name: &str) -> bool {
    is_heading(name)
        || matches!(
            name,
            "b" | "big"
                | "blockquote"
                | "body"
                | "br"
                | "center"
                | "code"
                | "dd"
                | "div"
                | "dl"
                | "dt"
                | "em"
                | "embed"
                | "head"
                | "hr"
                | "i"
                | "img"
                | "li"
                | "listing"
                | "menu"
                | "meta"
                | "nobr"
                | "ol"
                | "p"
                | "pre"
                | "ruby"
                | "s"
                | "small"
                | "span"
                | "strong"
                | "strike"
                | "sub"
                | "sup"
                | "table"
                | "tt"
                | "u"
                | "ul"
                | "var"
        )
}
