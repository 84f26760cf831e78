#!/usr/bin/env python3
"""Checks the rendered docs of the `tabula` crate for types users cannot follow.

Run after `cargo doc -p tabula --no-deps` (or `cargo doc --workspace --no-deps`):

    python3 .ci/check-doc-links.py [DOC_DIR]      # DOC_DIR defaults to target/doc

It walks DOC_DIR/tabula/**/*.html and fails, listing each problem once with the pages it
is on, when:

- a relative href (its #fragment stripped) names a file that does not exist;
- a relative href leads out of the tabula docs into another crate's docs (tabula_core,
  tabula_schedule, ...): a user depends on `tabula`, and with `--no-deps` those pages are
  not there (after `cargo doc --workspace` they are, which hides the problem);
- a signature (an item declaration or an impl/method header) shows a type name as plain
  text: rustdoc renders a path it cannot link, such as a type of a dependency that tabula
  does not re-export, without a link. Generic parameters (those the signature or its impl
  declares, and any one-letter name), `Self`, associated types (`D::Item`, `Item = T`),
  enum variants and the declared item's own name are plain text by design and are not
  reported; so are the types in KNOWN_UNLINKED below, which are unlinked on purpose.

The "Blanket Implementations" lists are skipped: they are the blanket impls of tabula's
dependencies (tracing's `Instrument`, hashbrown's `Equivalent`, ...), whose traits tabula does
not re-export and whose doc text carries links relative to their own crates.

Plain Python 3 standard library only.
"""

import os
import re
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

CRATE = "tabula"

# Files and folders at the top of the doc dir that every crate's pages link to.
SHARED = {"static.files", "src", "trait.impl", "type.impl", "search.index", "search-index.js",
          "crates.js", "help.html", "settings.html", "src-files.js", "all.html", "index.html"}

# Types that show unlinked in signatures on purpose: not reachable from outside their crate,
# or #[doc(hidden)]. A name here is not reported; any other unlinked type is.
KNOWN_UNLINKED = {
    # tabula-core's query internals: #[doc(hidden)] re-exports of `tabula::query`, public only
    # because they name the associated types of the built-in terms' `WorldQuery` impls.
    "PreparedColumn", "PreparedEntities", "ReadFetch", "WriteFetch", "TickFetch", "SparseLookup",
    # The same for multi-component views: names the associated types of `ViewTerm`'s impls.
    "ViewColumn", "ViewSparse",
    # `IntoSystem<Out, ..>`'s own generic parameter: rustdoc shows the provided `pipe` on each
    # implementor's page with the trait's parameter names (`B: IntoSystem<BOut, BMarker, Out>`),
    # below an impl header that does not declare them.
    "Out",
    # tabula-schedule's markers that keep its blanket impls of `IntoSystem`,
    # `IntoSystemConfigs`, `IntoSetConfigs` and `IntoSystemSet` apart; never named by users.
    "IsSystem", "IsTuple", "IsSet", "IsFunction", "IsFunctionSystem", "IsExclusiveSystem",
}

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words after which a capitalised name is declared, not used.
DECLARING = {"struct", "enum", "union", "trait", "type", "const", "static", "fn", "mod", "as"}


class Page(HTMLParser):
    """Collects a page's hrefs and the plain-text pieces of its signatures."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hrefs = []
        # Each signature is a list of (text, linked) pieces.
        self.signatures = []
        self._stack = []  # open tags: (tag, starts_signature, starts_blanket)
        self._blanket = False  # inside the "Blanket Implementations" list
        self._sig_depth = 0  # how many open tags start a signature (0 or 1)
        self._link_depth = 0
        self._enum_decl = False
        self.decls = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("a", "link") and attrs.get("href") and not self._blanket:
            self.hrefs.append(attrs["href"])
        if tag in ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "source", "track", "wbr"):
            return
        classes = (attrs.get("class") or "").split()
        blanket = attrs.get("id") == "blanket-implementations-list"
        if blanket:
            self._blanket = True
        starts = not self._blanket and self._sig_depth == 0 and (
            (tag == "pre" and "item-decl" in classes) or
            (tag in ("h3", "h4") and "code-header" in classes))
        if starts:
            self._sig_depth = 1
            self.signatures.append([])
            self.decls.append(tag == "pre")
        if tag == "a" and self._sig_depth:
            self._link_depth += 1
        self._stack.append((tag, starts, blanket))

    def handle_endtag(self, tag):
        while self._stack:
            open_tag, starts, blanket = self._stack.pop()
            if blanket:
                self._blanket = False
            if open_tag == "a" and self._sig_depth:
                self._link_depth -= 1
            if starts:
                self._sig_depth = 0
                self._link_depth = 0
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self._sig_depth:
            self.signatures[-1].append((data, self._link_depth > 0))


def declared_generics(text):
    """The generic parameter names a signature declares: `impl<'a, T: X, const N: usize>`,
    `fn f<D, F>(...)`, `struct S<T>`, `trait Q<T>`."""
    names = set()
    for m in re.finditer(r"\b(?:impl|fn\s+\w+|struct\s+\w+|enum\s+\w+|trait\s+\w+|union\s+\w+|"
                         r"type\s+\w+|for)\s*<", text):
        depth, i, start = 1, m.end(), m.end()
        while i < len(text) and depth:
            depth += {"<": 1, ">": -1}.get(text[i], 0)
            i += 1
        params, depth, piece = [], 0, ""
        for ch in text[start:i - 1]:
            if ch in "<([":
                depth += 1
            elif ch in ">)]":
                depth -= 1
            if ch == "," and depth == 0:
                params.append(piece)
                piece = ""
            else:
                piece += ch
        params.append(piece)
        for p in params:
            p = p.strip()
            p = re.sub(r"^const\s+", "", p)
            m2 = IDENT.match(p)
            if m2:
                names.add(m2.group(0))
    return names


def unlinked_types(pieces, outer_generics, is_decl):
    """Capitalised names shown as plain text in one signature, minus those that are plain
    text by design."""
    full = "".join(t for t, _ in pieces)
    generics = declared_generics(full) | outer_generics
    found = []
    pos = 0
    for text, linked in pieces:
        if not linked:
            for m in IDENT.finditer(text):
                name = m.group(0)
                if (len(name) < 2 or not name[0].isupper() or name in generics or name == "Self"
                        or name in KNOWN_UNLINKED):
                    # (A one-letter name is a generic parameter, e.g. `T` in "Methods from
                    # Deref<Target = [T]>", whose impl header the page does not show.)
                    continue
                at = pos + m.start()
                before = full[:at]
                if not before.strip():
                    continue  # what the header declares: an enum variant `Name(..)`
                if before.rstrip().endswith("::"):
                    continue  # an associated item: `D::Item`, `<T as X>::Out`
                if re.match(r"\s*=(?!=)", full[at + len(name):]):
                    continue  # an associated type binding: `Iterator<Item = T>`
                if before.rstrip().endswith("#[derive("):
                    continue  # a derive macro's declaration: `#[derive(Name)]`
                prev = IDENT.findall(before[-40:])
                if prev and prev[-1] in DECLARING and re.search(r"\b%s\s+$" % prev[-1], before):
                    continue  # the declared item itself, or `type Item`, `const EMPTY`
                if is_decl:
                    line_start = before.rfind("\n") + 1
                    if before[line_start:].strip() in ("", "pub"):
                        continue  # an enum variant (`Name(..)`, `Name {`, `Name,`)
                # Inside a /* comment */ rustdoc writes (`/* private fields */`).
                if before.rfind("/*") > before.rfind("*/"):
                    continue
                if "//" in before[before.rfind("\n") + 1:]:
                    continue  # a `// Required method` line
                found.append(name)
        pos += len(text)
    return found


def main():
    doc_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/doc")
    root = os.path.join(doc_dir, CRATE)
    if not os.path.isdir(root):
        sys.exit(f"check-doc-links: {root} does not exist; run `cargo doc -p {CRATE} --no-deps` first")
    broken = {}  # problem -> pages
    pages = 0
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".html"):
                continue
            path = os.path.join(dirpath, name)
            rel_page = os.path.relpath(path, doc_dir)
            pages += 1
            page = Page()
            with open(path, encoding="utf-8") as f:
                page.feed(f.read())
            for href in page.hrefs:
                parts = urlsplit(href)
                if parts.scheme or parts.netloc or not parts.path:
                    continue  # absolute (std's docs, the web) or a #fragment on this page
                target = os.path.normpath(os.path.join(dirpath, unquote(parts.path)))
                rel = os.path.relpath(target, doc_dir)
                top = rel.split(os.sep)[0]
                if rel.startswith(".."):
                    problem = f"href {href!r} leaves the doc dir"
                elif not os.path.exists(target):
                    problem = f"broken link to {rel}"
                elif top != CRATE and top not in SHARED:
                    problem = f"link to {rel}, outside the {CRATE} docs"
                else:
                    continue
                broken.setdefault(problem, set()).add(rel_page)
            impl_generics = set()
            for pieces, is_decl in zip(page.signatures, page.decls):
                text = "".join(t for t, _ in pieces)
                if text.lstrip().startswith(("impl", "unsafe impl")) or is_decl:
                    # Methods below an impl header or a trait declaration use its generics.
                    impl_generics = declared_generics(text)
                    outer = set()
                else:
                    outer = impl_generics
                for name in unlinked_types(pieces, outer, is_decl):
                    sig = re.sub(r"\s+", " ", text).strip()
                    if len(sig) > 160:
                        sig = sig[:157] + "..."
                    problem = f"unlinked type `{name}` in `{sig}`"
                    broken.setdefault(problem, set()).add(rel_page)
    if pages == 0:
        sys.exit(f"check-doc-links: no pages under {root}")
    for problem in sorted(broken):
        where = sorted(broken[problem])
        more = f" (+{len(where) - 3} more)" if len(where) > 3 else ""
        print(f"{problem}\n    on {', '.join(where[:3])}{more}")
    if broken:
        print(f"check-doc-links: {len(broken)} problem(s) in {pages} pages under {root}")
        sys.exit(1)
    print(f"check-doc-links: {pages} pages under {root}: every link works, every signature type is linked")


if __name__ == "__main__":
    main()
