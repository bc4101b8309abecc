//! `/flamegraph.svg`: the profile as a flame graph, rendered by `inferno`
//! from the collapsed stacks.

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use inferno::flamegraph::color::{Color, PaletteMap};
use pcct::export::{collapsed, ReportOptions};
use pcct::{FrameKind, MethodKind, MethodTable, Metric};
use pcct_sampler::kernel_frames::KERNEL_LIBRARY;

use super::reports::too_large;
use crate::error::ApiError;
use crate::heavy::with_snapshot;
use crate::params::{with_resource, Params};
use crate::state::AppState;
use crate::text_budget::within_budget;

/// Renders collapsed-stack `lines` to SVG, each frame coloured by what
/// its method is in `methods` ([`palette`]), and a Java frame written with
/// its kind's suffix (`Main.run_[j]`) by its kind.
pub fn render(lines: &str, title: &str, metric: Metric, methods: &MethodTable) -> Result<Vec<u8>, String> {
    let mut palette = palette(methods);
    let mut options = inferno::flamegraph::Options::default();
    options.palette_map = Some(&mut palette);
    options.title = title.to_string();
    options.count_name = metric.unit().to_string();
    options.hash = true;
    options.deterministic = true;
    options.min_width = 0.05;
    let mut svg = Vec::new();
    if lines.trim().is_empty() {
        // inferno refuses an empty profile; draw an empty graph that says so.
        let placeholder = "[no samples yet] 1\n";
        inferno::flamegraph::from_lines(&mut options, placeholder.lines(), &mut svg).map_err(|e| e.to_string())?;
    } else {
        inferno::flamegraph::from_lines(&mut options, lines.lines(), &mut svg).map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Every method's colour, by its kind, as async-profiler colours frames:
/// Java green, native functions red (C++ ones, with `::`, yellow), the
/// kernel's orange, pseudo-frames grey, allocated types and monitors'
/// classes aqua; the shade from the name (inferno's names-based palettes
/// would call a library without symbols, `libz.so.1`, or a JNI function,
/// `Java_java_util_zip_...`, Java by its dots or capital). A Java method
/// written with a frame kind's suffix gets that kind's colour
/// ([`kind_color`]).
fn palette(methods: &MethodTable) -> PaletteMap {
    let mut palette = PaletteMap::default();
    for (id, method) in methods.iter() {
        let name = collapsed::method_name(methods, id);
        let shade = shade_of(&name);
        let scale = |low: f64, span: f64| (low + span * shade) as u8;
        let color = match method.kind {
            MethodKind::Java => Color { r: scale(50.0, 60.0), g: scale(170.0, 60.0), b: scale(50.0, 60.0) },
            MethodKind::Native if *method.class == *KERNEL_LIBRARY => {
                Color { r: scale(190.0, 65.0), g: scale(90.0, 65.0), b: 0 }
            }
            MethodKind::Native if method.name.contains("::") => {
                Color { r: scale(175.0, 55.0), g: scale(175.0, 55.0), b: scale(50.0, 20.0) }
            }
            MethodKind::Native => Color { r: scale(200.0, 55.0), g: scale(50.0, 80.0), b: scale(50.0, 80.0) },
            MethodKind::Type => Color { r: scale(50.0, 60.0), g: scale(165.0, 55.0), b: scale(165.0, 55.0) },
            MethodKind::Pseudo => {
                let grey = scale(160.0, 40.0);
                Color { r: grey, g: grey, b: grey }
            }
        };
        if method.kind == MethodKind::Java {
            for kind in [FrameKind::Interpreted, FrameKind::Tier1, FrameKind::Tier4, FrameKind::Inlined] {
                palette.insert(format!("{name}{}", kind.suffix()), kind_color(kind, shade));
            }
        }
        palette.insert(name, color);
    }
    palette
}

/// A Java frame's colour by its kind, async-profiler's: interpreted pale
/// green, C1 yellow-green, C2 green, inlined aqua (shaded by `shade`).
fn kind_color(kind: FrameKind, shade: f64) -> Color {
    let (base, spread) = match kind {
        FrameKind::Interpreted => (0xb2e1b2, 20.0),
        FrameKind::Tier1 | FrameKind::Tier2 | FrameKind::Tier3 => (0xcce880, 20.0),
        FrameKind::Inlined => (0x50cccc, 30.0),
        _ => (0x50e150, 30.0),
    };
    let channel = |shift: u32| {
        let value = ((base >> shift) & 0xFF) as f64 + spread * (shade - 0.5);
        value.clamp(0.0, 255.0) as u8
    };
    Color { r: channel(16), g: channel(8), b: channel(0) }
}

/// A shade in [0, 1) from a name (FNV-1a), the same for a name every time.
fn shade_of(name: &str) -> f64 {
    let hash =
        name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ byte as u64).wrapping_mul(0x100_0000_01b3));
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// Contexts below this share of the total are left out of a flame graph by
/// default: 0.01% is a tenth of a pixel at inferno's 1200 px width.
const DEFAULT_MIN_SHARE: f64 = 0.0001;

/// `GET /flamegraph.svg?resource=<any resource>&title=...&min_share=0..1 (0.0001)&kinds=on|off`:
/// `kinds` colours Java frames by their kinds, each named with its suffix
/// (default: on when the agent records kinds, `kinds=on`).
/// `s`, `x` and `y` are the flame graph's own state (its search term and
/// zoomed frame), which its script keeps in the URL and applies on load:
/// accepted and left to the script.
pub async fn flamegraph(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &with_resource(&["title", "min_share", "s", "x", "y", "kinds"]))?;
    let metric = params.metric(state.config.report_metric)?;
    let recorded = if state.shared.config.kinds { "on" } else { "off" };
    let options = ReportOptions {
        metric,
        min_cum_share: params.number("min_share", 0.0, 1.0, DEFAULT_MIN_SHARE)?,
        annotate: params.choice("kinds", &["off", "on"], recorded)? == "on",
    };
    let title = params.get("title").unwrap_or("pcct flame graph").to_string();
    if title.chars().count() > 200 {
        return Err(ApiError::parameter("title", "at most 200 characters"));
    }
    if params.get("s").is_some_and(|search| search.chars().count() > 200) {
        return Err(ApiError::parameter("s", "at most 200 characters"));
    }
    for coordinate in ["x", "y"] {
        params.number(coordinate, 0.0, 1e9, 0.0)?;
    }
    let budget = state.config.text_budget;
    let svg = with_snapshot(&state, move |profile| {
        within_budget(budget, |out| collapsed::write_to(out, &profile.tree, &profile.methods, &options))
            .map(|lines| render(&lines, &title, metric, &profile.methods))
    })
    .await?
    .ok_or_else(too_large)?
    .map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fill of the frame titled `name` in `svg`, as (r, g, b).
    fn fill_of(svg: &str, name: &str) -> (u8, u8, u8) {
        let at = svg.find(&format!("<title>{name} (")).unwrap_or_else(|| panic!("no frame {name}:\n{svg}"));
        let fill = &svg[at..][svg[at..].find("fill=\"rgb(").expect("a fill") + 10..];
        let parts: Vec<u8> =
            fill[..fill.find(')').expect(")")].split(',').map(|part| part.parse().expect("a byte")).collect();
        (parts[0], parts[1], parts[2])
    }

    #[test]
    fn frames_are_coloured_by_kind_not_by_their_names_look() {
        let mut methods = MethodTable::new();
        methods.intern("Main", "run", "()V");
        methods.intern_native("libzip.so", "Java_java_util_zip_Deflater_deflateBytesBytes");
        methods.intern_native("libz.so.1", "libz.so.1");
        methods.intern_native("libjvm.so", "Thread::call_run()");
        methods.intern_pseudo("[GC]");
        methods.intern_native(KERNEL_LIBRARY, "do_syscall_64_[k]");
        let lines = "Main.run;Java_java_util_zip_Deflater_deflateBytesBytes;libz.so.1 10\n\
                     [GC];Thread::call_run() 5\nMain.run;do_syscall_64_[k] 3\n";
        let svg = String::from_utf8(render(lines, "t", Metric::Samples, &methods).expect("renders")).expect("UTF-8");
        let (r, g, b) = fill_of(&svg, "Main.run");
        assert!(g > r && g > b, "Java is green: {:?}", (r, g, b));
        for native in ["Java_java_util_zip_Deflater_deflateBytesBytes", "libz.so.1"] {
            let (r, g, b) = fill_of(&svg, native);
            assert!(r >= 200 && g < 140 && b < 140, "{native} is red: {:?}", (r, g, b));
        }
        let (r, g, b) = fill_of(&svg, "Thread::call_run()");
        assert!(r >= 175 && g >= 175 && b < 80, "C++ is yellow: {:?}", (r, g, b));
        let (r, g, b) = fill_of(&svg, "do_syscall_64");
        assert!(r >= 190 && (90..160).contains(&g) && b == 0, "the kernel is orange: {:?}", (r, g, b));
        let (r, g, b) = fill_of(&svg, "[GC]");
        assert!(r == g && g == b, "a pseudo-frame is grey: {:?}", (r, g, b));
    }

    #[test]
    fn annotated_java_frames_are_coloured_by_their_kind() {
        let mut methods = MethodTable::new();
        methods.intern("Main", "run", "()V");
        methods.intern("Main", "leaf", "()V");
        let lines = "Main.run_[0];Main.leaf_[i] 4\nMain.run_[0];Main.leaf_[1] 3\nMain.run_[j] 2\n";
        let svg = String::from_utf8(render(lines, "t", Metric::Samples, &methods).expect("renders")).expect("UTF-8");
        // inferno writes `_[i]` and `_[j]` frames without their suffix.
        let (r, g, b) = fill_of(&svg, "Main.leaf");
        assert!(g >= 180 && b >= 180 && r < 110, "inlined is aqua: {:?}", (r, g, b));
        let (r, g, b) = fill_of(&svg, "Main.run_[0]");
        assert!(r >= 160 && g >= 210 && b >= 160, "interpreted is pale green: {:?}", (r, g, b));
        let (r, g, b) = fill_of(&svg, "Main.leaf_[1]");
        assert!(r >= 190 && g >= 210 && b < 150, "C1 is yellow-green: {:?}", (r, g, b));
        let (r, g, b) = fill_of(&svg, "Main.run");
        assert!(g >= 200 && r < 110 && b < 110, "C2 is green: {:?}", (r, g, b));
    }
}
