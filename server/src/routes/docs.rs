//! `GET /docs/{page}` and `GET /api/openapi.json`: the project's documentation (`docs/*.md`, README,
//! BENCHMARKS, ARCHITECTURE), built into the binary and served as HTML, so
//! the live page's sections link to the explanation that matches this very
//! build, with no network. Links between the pages are rewritten to their
//! routes; a link to anything else in the repository (a source file, a
//! dashboard) keeps its text and loses its target.

use axum::extract::{Path, RawQuery};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};

use crate::error::ApiError;
use crate::params::Params;

/// (route name, the repository's path of the file, its text).
pub const PAGES: &[(&str, &str, &str)] = &[
    ("readme", "README.md", include_str!("../../../README.md")),
    ("benchmarks", "BENCHMARKS.md", include_str!("../../../BENCHMARKS.md")),
    ("architecture", "ARCHITECTURE.md", include_str!("../../../ARCHITECTURE.md")),
    ("allocations-and-locks", "docs/allocations-and-locks.md", include_str!("../../../docs/allocations-and-locks.md")),
    ("comparison", "docs/comparison.md", include_str!("../../../docs/comparison.md")),
    ("deployment", "docs/deployment.md", include_str!("../../../docs/deployment.md")),
    ("development", "docs/development.md", include_str!("../../../docs/development.md")),
    ("http-api", "docs/http-api.md", include_str!("../../../docs/http-api.md")),
    ("jit-feedback", "docs/jit-feedback.md", include_str!("../../../docs/jit-feedback.md")),
    ("memory", "docs/memory.md", include_str!("../../../docs/memory.md")),
    ("metrics", "docs/metrics.md", include_str!("../../../docs/metrics.md")),
    ("options", "docs/options.md", include_str!("../../../docs/options.md")),
    ("pprof", "docs/pprof.md", include_str!("../../../docs/pprof.md")),
    ("security", "docs/security.md", include_str!("../../../docs/security.md")),
    ("signals-and-accuracy", "docs/signals-and-accuracy.md", include_str!("../../../docs/signals-and-accuracy.md")),
];

const STYLE: &str =
    "body{font:15px/1.5 system-ui,sans-serif;max-width:60em;margin:1.5em auto;padding:0 1em;color:#222}\
code,pre{font:13px ui-monospace,monospace;background:#f3f3f3}pre{padding:.6em;overflow-x:auto}\
table{border-collapse:collapse}th,td{border:1px solid #ddd;padding:.2em .5em;text-align:left}";

pub async fn page(Path(name): Path<String>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    let Some((_, file, text)) = PAGES.iter().find(|(route, _, _)| *route == name) else {
        let known: Vec<&str> = PAGES.iter().map(|(route, _, _)| *route).collect();
        return Err(ApiError::not_found(format!("no documentation page {name:?}; pages: {}", known.join(", "))));
    };
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>pcct: {file}</title>\
         <style>{STYLE}</style></head><body><p><a href=\"/\">live page</a> · <a href=\"/docs/readme\">README</a></p>{}</body></html>",
        render(file, text)
    );
    Ok(([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], body)
        .into_response())
}

/// `GET /api/openapi.json`: the API's reference ([`crate::openapi`]).
pub async fn openapi(RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    Ok(axum::Json(crate::openapi::document()).into_response())
}

/// `text` (the Markdown of the repository's `file`) as HTML, its links
/// rewritten by [`route_of`] and its headings given GitHub's anchors
/// ([`slug`]), so `page#heading` links land where they do on GitHub.
pub fn render(file: &str, text: &str) -> String {
    let mut dropped = 0usize;
    let mut events: Vec<Event> = Vec::new();
    for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => match route_of(file, &dest_url) {
                Some(url) => events.push(Event::Start(Tag::Link { link_type, dest_url: CowStr::from(url), title, id })),
                None => dropped += 1,
            },
            Event::End(TagEnd::Link) if dropped > 0 => dropped -= 1,
            // Raw HTML in the Markdown is shown as text, never run.
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            other => events.push(other),
        }
    }
    name_headings(&mut events);
    let mut out = String::new();
    html::push_html(&mut out, events.into_iter());
    out
}

/// Gives each heading the id GitHub gives it: the slug of its text, with
/// `-1`, `-2`, ... after a repeated one.
fn name_headings(events: &mut [Event]) {
    let mut seen: Vec<String> = Vec::new();
    for start in 0..events.len() {
        if !matches!(events[start], Event::Start(Tag::Heading { .. })) {
            continue;
        }
        let text: String = events[start + 1..]
            .iter()
            .take_while(|event| !matches!(event, Event::End(TagEnd::Heading(_))))
            .filter_map(|event| match event {
                Event::Text(text) | Event::Code(text) => Some(text.as_ref()),
                _ => None,
            })
            .collect();
        let base = slug(&text);
        let repeats = seen.iter().filter(|earlier| **earlier == base).count();
        let anchor = if repeats == 0 { base.clone() } else { format!("{base}-{repeats}") };
        seen.push(base);
        if let Event::Start(Tag::Heading { id, .. }) = &mut events[start] {
            *id = Some(CowStr::from(anchor));
        }
    }
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, every other
/// character but letters, digits, `-` and `_` dropped.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Where a link in the repository's `file` to `target` goes when served:
/// unchanged with a scheme or as a bare anchor, `/docs/<route>#anchor` for
/// a served page, `None` for any other file of the repository.
pub fn route_of(file: &str, target: &str) -> Option<String> {
    if target.starts_with('#') || target.contains("://") || target.starts_with("mailto:") {
        return Some(target.to_string());
    }
    let (path, anchor) = target.split_once('#').map_or((target, None), |(path, anchor)| (path, Some(anchor)));
    let resolved = resolve(file, path)?;
    let (route, _, _) = PAGES.iter().find(|(_, page, _)| *page == resolved)?;
    Some(match anchor {
        Some(anchor) => format!("/docs/{route}#{anchor}"),
        None => format!("/docs/{route}"),
    })
}

/// `path`, relative to the repository's `file`, as a path from the
/// repository's root (`None` if it leaves the repository).
fn resolve(file: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = file.split('/').collect();
    parts.pop();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_between_pages_go_to_their_routes_and_others_lose_their_target() {
        assert_eq!(route_of("docs/pprof.md", "memory.md#watching-it").as_deref(), Some("/docs/memory#watching-it"));
        assert_eq!(route_of("docs/pprof.md", "../BENCHMARKS.md").as_deref(), Some("/docs/benchmarks"));
        assert_eq!(route_of("README.md", "docs/options.md").as_deref(), Some("/docs/options"));
        assert_eq!(route_of("README.md", "#a-5-minute-tour").as_deref(), Some("#a-5-minute-tour"));
        assert_eq!(route_of("README.md", "https://example.org/x").as_deref(), Some("https://example.org/x"));
        assert_eq!(route_of("README.md", "dashboards/README.md"), None);
        assert_eq!(route_of("README.md", "../../etc/passwd"), None);
        let html = render("README.md", "[opts](docs/options.md) and [the code](agent/src/options.rs) <b>x</b>");
        assert!(html.contains("<a href=\"/docs/options\">opts</a>"), "{html}");
        assert!(html.contains("the code") && !html.contains("agent/src/options.rs\""), "{html}");
        assert!(html.contains("&lt;b&gt;x&lt;/b&gt;"), "raw HTML is shown as text: {html}");
        let headings = render("x.md", "# A `code` title, again!\n\n## Twice\n\n## Twice\n");
        assert!(headings.contains("<h1 id=\"a-code-title-again\">"), "{headings}");
        assert!(headings.contains("<h2 id=\"twice\">") && headings.contains("<h2 id=\"twice-1\">"), "{headings}");
    }

    #[test]
    fn every_served_page_renders_with_its_headings() {
        for (route, file, text) in PAGES {
            let html = render(file, text);
            assert!(html.contains("<h1"), "{route}: no heading");
        }
    }
}
