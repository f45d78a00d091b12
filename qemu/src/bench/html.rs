//! `index.html`: one self-contained page per results directory (and `kx compare`'s combined
//! page): inline CSS, the verdicts, the machine and host information, the problems if any,
//! the results table as preformatted text, every scenario's SVGs inlined (with a link to
//! each file), and the lock statistics as a table. No script, no external
//! resource, so it opens anywhere, offline, and can be mailed as one file.
//!
//! The markup is also well-formed XML (every element closed, text escaped, the SVGs as
//! plotters writes them, which are XML), so it can be checked with an XML parser.

use super::plot::xml_escape;

const STYLE: &str = "\
body{font-family:sans-serif;margin:1.5em auto;max-width:1000px;color:#222}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}\
table{border-collapse:collapse;font-size:.9em}\
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}\
pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:.82em;line-height:1.3}\
.problems{color:#a00}.plot{margin:1em 0}.plot svg{max-width:100%;height:auto}";

/// A page under construction.
pub struct Page {
    body: String,
    title: String,
}

impl Page {
    /// An empty page with `title` (also its first heading).
    #[must_use]
    pub fn new(title: &str) -> Page {
        Page {
            body: format!("<h1>{}</h1>\n", xml_escape(title)),
            title: title.to_owned(),
        }
    }

    /// A section heading.
    pub fn heading(&mut self, text: &str) {
        self.body
            .push_str(&format!("<h2>{}</h2>\n", xml_escape(text)));
    }

    /// A paragraph of text.
    pub fn paragraph(&mut self, text: &str) {
        self.body
            .push_str(&format!("<p>{}</p>\n", xml_escape(text)));
    }

    /// A two-column table of (name, value) rows.
    pub fn info(&mut self, rows: &[(String, String)]) {
        self.body.push_str("<table class=\"info\">\n");
        for (k, v) in rows {
            self.body.push_str(&format!(
                "<tr><th>{}</th><td>{}</td></tr>\n",
                xml_escape(k),
                xml_escape(v)
            ));
        }
        self.body.push_str("</table>\n");
    }

    /// A list of problems (nothing when empty).
    pub fn problems(&mut self, problems: &[String]) {
        if problems.is_empty() {
            return;
        }
        self.body.push_str("<ul class=\"problems\">\n");
        for p in problems {
            self.body.push_str(&format!("<li>{}</li>\n", xml_escape(p)));
        }
        self.body.push_str("</ul>\n");
    }

    /// Preformatted text (a table).
    pub fn pre(&mut self, text: &str) {
        self.body
            .push_str(&format!("<pre>{}</pre>\n", xml_escape(text.trim_end())));
    }

    /// A table with a header row; `class` names it (`verdicts`, `locks`).
    pub fn table(&mut self, class: &str, header: &[&str], rows: &[Vec<String>]) {
        self.body
            .push_str(&format!("<table class=\"{}\">\n<tr>", xml_escape(class)));
        for h in header {
            self.body.push_str(&format!("<th>{}</th>", xml_escape(h)));
        }
        self.body.push_str("</tr>\n");
        for r in rows {
            self.body.push_str("<tr>");
            for c in r {
                self.body.push_str(&format!("<td>{}</td>", xml_escape(c)));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table>\n");
    }

    /// A link to a file beside the page.
    pub fn file_link(&mut self, name: &str) {
        self.body.push_str(&format!(
            "<p class=\"file\"><a href=\"{0}\">{0}</a></p>\n",
            xml_escape(name)
        ));
    }

    /// An SVG, inlined (any XML declaration before `<svg` is dropped).
    pub fn svg(&mut self, svg: &str) {
        let start = svg.find("<svg").unwrap_or(0);
        self.body.push_str("<div class=\"plot\">\n");
        self.body.push_str(svg[start..].trim_end());
        self.body.push_str("\n</div>\n");
    }

    /// The whole document.
    #[must_use]
    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
            xml_escape(&self.title),
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_the_page_is_xml() {
        let mut p = Page::new("a <b> & \"c\"");
        p.info(&[("k<".into(), "v&".into())]);
        p.problems(&["line 3: `<script>` & more".into()]);
        p.pre("x < y\n");
        p.svg("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><text>t</text></svg>");
        let html = p.finish();
        assert!(!html.contains("<script>") && !html.contains("<?xml"));
        let opt = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        let doc = roxmltree::Document::parse_with_options(&html, opt).unwrap();
        let text = |tag: &str| {
            doc.descendants()
                .find(|n| n.has_tag_name(tag))
                .and_then(|n| n.text())
                .unwrap()
                .to_owned()
        };
        assert_eq!(text("title"), "a <b> & \"c\"");
        assert_eq!(text("li"), "line 3: `<script>` & more");
        assert_eq!(text("pre"), "x < y");
        assert_eq!(text("th"), "k<");
    }
}
