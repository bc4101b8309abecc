//! Names as the JVM hands them over (modified UTF-8) reach the profile
//! whole and stay on one line (issue 16): a method named with letters
//! above U+FFFF (surrogate pairs in the class file, which a UTF-8 decoder
//! made into replacement characters) and a class whose name holds a
//! newline, a tab, U+0001 and a carriage return (which split the collapsed
//! file's lines). The collapsed file escapes them; parsing gives them back.

use std::time::Duration;

use pcct_tests::{per_jdk, read_collapsed, Fixture, Jvm, QUIET_HTTP};

const SUPPLEMENTARY: &str = "OddNames.\u{1D524}\u{1D52C}";
const CONTROL: &str = "Odd\n\t\u{1}\rxate.spin";
const CONTROL_ESCAPED: &str = "Odd\\x0A\\x09\\x01\\x0Dxate.spin";

per_jdk! {
    fn odd_names_are_decoded_whole_and_kept_on_one_line(jdk) {
        let fixture = Fixture::new("odd-names");
        let path = fixture.path("p.collapsed");
        let finished = Jvm::new(jdk, &fixture, "OddNames")
            .arg("2")
            .agent(format!("interval=1ms,file={},{QUIET_HTTP}", path.display()))
            .run(Duration::from_secs(90));
        finished.assert_success();
        let text = std::fs::read_to_string(&path).expect("the collapsed file");
        for line in text.lines() {
            let value = line.rsplit_once(' ').map(|(_, value)| value);
            assert!(value.is_some_and(|value| value.parse::<u64>().is_ok()), "a split line: {line:?}");
            assert!(!line.contains(|c: char| c.is_control()), "a control character: {line:?}");
        }
        assert!(text.contains(SUPPLEMENTARY), "JDK {}: no {SUPPLEMENTARY}:\n{text}", jdk.major);
        assert!(text.contains(CONTROL_ESCAPED), "JDK {}: no {CONTROL_ESCAPED}:\n{text}", jdk.major);
        let stacks = read_collapsed(&path);
        assert!(stacks.iter().any(|(frames, _)| frames.last().is_some_and(|leaf| leaf == CONTROL)), "{stacks:?}");
    }
}
