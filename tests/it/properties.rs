//! Property tests (proptest; cargo-fuzz needs a nightly toolchain this project's machines do not
//! have) of everything that parses untrusted input: the volume tag parser, the hosts-file editor,
//! the cluster-spec loader, the YAML quoting of template values, Go durations and mountinfo.
//! `PROPTEST_CASES` raises the number of cases for a longer run (scripts/fuzz).

use proptest::prelude::*;
use protokube::testing::is_dns1123_label;
use protokube::testing::parse_etcd_tag;
use protokube::testing::quote_yaml;
use protokube::testing::{managed_records, update_hosts, HostRecords, GUARD_BEGIN, GUARD_END};

fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Lines a hosts file may hold, weighted towards the interesting ones.
fn hosts_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(GUARD_BEGIN.to_owned()),
        Just(GUARD_END.to_owned()),
        Just(format!("  {GUARD_BEGIN}  ")),
        Just(String::new()),
        Just("\r".to_owned()),
        Just("10.0.0.1\tetcd-a.internal.c".to_owned()),
        Just("2001:db8::1\tetcd-a.internal.c".to_owned()),
        "[0-9.]{1,15}[ \t][a-z.-]{1,20}",
        "[ -~]{0,40}",
        any::<String>().prop_map(|s| s.replace('\n', "")),
    ]
}

fn records() -> impl Strategy<Value = HostRecords> {
    proptest::collection::btree_map(
        "[a-z][a-z0-9.-]{0,20}",
        proptest::collection::vec(
            prop_oneof![
                any::<[u8; 4]>().prop_map(std::net::IpAddr::from),
                any::<[u8; 16]>().prop_map(std::net::IpAddr::from),
            ],
            0..3,
        ),
        0..5,
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn tag_parser_never_panics_and_accepts_only_consistent_values(key in ".{0,12}", value in ".{0,40}") {
        if let Ok(m) = parse_etcd_tag(&key, &value) {
            prop_assert!(m.members.contains(&m.member));
            prop_assert!(is_dns1123_label(&m.cluster));
            prop_assert!(m.members.iter().all(|n| is_dns1123_label(n)));
        }
    }

    #[test]
    fn hosts_editor_is_idempotent_and_keeps_unmanaged_lines(
        lines in proptest::collection::vec(hosts_line(), 0..30),
        final_newline in any::<bool>(),
        records in records(),
    ) {
        let mut content = lines.join("\n");
        if final_newline {
            content.push('\n');
        }
        let once = update_hosts(content.as_bytes(), &records);
        prop_assert_eq!(update_hosts(&once, &records), once.clone());
        let once = String::from_utf8(once).unwrap();
        prop_assert_eq!(once.matches(GUARD_BEGIN).count(), 1);
        prop_assert_eq!(once.matches(GUARD_END).count(), 1);
        // One well-formed block stays where it stands, everything around it kept; any other
        // file gets kOps' layout, the block last.
        let guards: Vec<(usize, &str)> = content
            .split('\n')
            .enumerate()
            .filter(|(_, l)| l.trim() == GUARD_BEGIN || l.trim() == GUARD_END)
            .collect();
        match guards.as_slice() {
            [(begin, b), (end, e)] if b.trim() == GUARD_BEGIN && e.trim() == GUARD_END => {
                let lines: Vec<&str> = content.split('\n').collect();
                let head = lines[..=*begin].join("\n");
                prop_assert!(once.starts_with(&head), "moved: {:?}", once);
                let after = lines[end + 1..].join("\n");
                if !after.trim().is_empty() {
                    prop_assert!(once.ends_with(&after), "after the block: {:?}", once);
                }
            }
            _ => {
                let tail = format!("{GUARD_END}\n");
                prop_assert!(once.ends_with(&tail));
            }
        }
        // Names with addresses are in the block; read back, they are what was asked.
        let expected: HostRecords = records
            .iter()
            .filter(|(_, a)| !a.is_empty())
            .map(|(n, a)| {
                let mut a = a.clone();
                a.sort();
                a.dedup();
                (n.clone(), a)
            })
            .collect();
        prop_assert_eq!(managed_records(once.as_bytes()), expected);
        // Every unmanaged line before the first guard is kept, in order.
        let kept: Vec<&str> = once.split('\n').collect();
        for line in content.split('\n').take_while(|l| l.trim() != GUARD_BEGIN && l.trim() != GUARD_END) {
            if !line.trim().is_empty() {
                prop_assert!(kept.contains(&line), "lost line {:?}", line);
            }
        }
    }

    #[test]
    fn quoted_values_are_one_scalar_with_the_same_text(value in any::<String>()) {
        let doc = format!("key: {}\nother: 1\n", quote_yaml(&value));
        let parsed: yaml_serde::Value = yaml_serde::from_str(&doc).unwrap();
        prop_assert_eq!(parsed["key"].as_str(), Some(value.as_str()));
        prop_assert_eq!(parsed.as_mapping().unwrap().len(), 2);
    }

    #[test]
    fn spec_loader_never_panics(text in any::<String>()) {
        let _ = protokube::testing::ClusterDocument::parse(&text, "fuzz");
    }

    #[test]
    fn spec_loader_never_panics_on_yaml_shaped_input(
        name in "[ -~]{0,20}",
        body in proptest::collection::vec("[ -~]{0,30}", 0..10),
    ) {
        let text = format!(
            "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata:\n  name: {name}\nspec:\n  {}\n",
            body.join("\n  ")
        );
        let _ = protokube::testing::ClusterDocument::parse(&text, "fuzz");
    }

    #[test]
    fn go_durations_round_trip(nanos in -1_000_000_000_000_000i64..1_000_000_000_000_000i64) {
        let text = protokube::testing::format_go_duration(i128::from(nanos));
        prop_assert_eq!(protokube::testing::parse_go_duration(&text), Ok(i128::from(nanos)));
    }

    #[test]
    fn duration_and_mountinfo_parsers_never_panic(text in any::<String>()) {
        let _ = protokube::testing::parse_go_duration(&text);
        let _ = protokube::testing::parse_mountinfo(&text);
    }
}
