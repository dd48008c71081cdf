//! Component flags from the cluster spec by kOps' flag-builder rules, driven by the field → flag
//! table in `templates/componentconfig-flags.tsv` (taken from kOps' componentconfig.go). Pure.

use std::sync::OnceLock;

use anyhow::{anyhow, bail, Context as _, Result};
use yaml_serde::{Mapping, Value};

/// The table compiled into the binary.
const TABLE_TSV: &str = include_str!("../../../templates/componentconfig-flags.tsv");

/// How a field's value becomes a flag value (from its Go type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FieldType {
    String,
    Bool,
    Int,
    StringList,
    StringMap,
    Duration,
    Quantity,
    /// A nested struct whose own fields contribute flags (e.g. `LeaderElectionConfiguration`).
    Nested(String),
}

impl FieldType {
    fn from_go(go_type: &str) -> Result<Self> {
        let base = go_type.trim_start_matches('*');
        Ok(match base {
            "string" => FieldType::String,
            "bool" => FieldType::Bool,
            "int32" | "int64" | "int" => FieldType::Int,
            "[]string" => FieldType::StringList,
            "map[string]string" => FieldType::StringMap,
            "metav1.Duration" => FieldType::Duration,
            "resource.Quantity" => FieldType::Quantity,
            other if other.chars().next().is_some_and(char::is_uppercase) => {
                FieldType::Nested(other.to_owned())
            }
            other => bail!("unsupported Go type `{other}` in the flag table"),
        })
    }
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FlagField {
    pub(crate) section: String,
    pub(crate) key: String,
    pub(crate) field_type: FieldType,
    pub(crate) flag: Option<String>,
    pub(crate) repeat: bool,
    pub(crate) flag_empty: Option<String>,
    pub(crate) include_empty: bool,
}

/// The field → flag table.
#[derive(Clone, Debug, Default)]
pub struct FlagTable {
    fields: Vec<FlagField>,
}

impl FlagTable {
    /// Parses the TSV form: `struct, json_key, go_type, flag, options, flag_empty, flag_include_empty`.
    pub(crate) fn parse(tsv: &str) -> Result<Self> {
        let mut fields = Vec::new();
        for (number, line) in tsv.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let columns: Vec<&str> = line.split('\t').collect();
            let column = |i: usize| columns.get(i).copied().unwrap_or("").trim();
            let field_type = FieldType::from_go(column(2))
                .with_context(|| format!("flag table line {}", number + 1))?;
            let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
            fields.push(FlagField {
                section: column(0).to_owned(),
                key: column(1).to_owned(),
                field_type,
                flag: non_empty(column(3)),
                repeat: column(4).split(',').any(|o| o.trim() == "repeat"),
                flag_empty: non_empty(column(5)),
                include_empty: matches!(column(6), "true" | "yes" | "1"),
            });
        }
        Ok(Self { fields })
    }

    /// The table shipped with protokube.
    pub fn builtin() -> &'static FlagTable {
        static TABLE: OnceLock<FlagTable> = OnceLock::new();
        TABLE.get_or_init(|| FlagTable::parse(TABLE_TSV).unwrap_or_default())
    }

    /// The rows of one struct, e.g. `KubeAPIServerConfig`.
    pub(crate) fn section<'a>(
        &'a self,
        section: &'a str,
    ) -> impl Iterator<Item = &'a FlagField> + 'a {
        self.fields.iter().filter(move |f| f.section == section)
    }

    /// The flags a spec section gives, sorted as strings. `path` names the section in errors
    /// (e.g. `spec.kubeAPIServer`). Only fields that are set (present and not null) give flags.
    pub fn build(&self, section: &str, values: &Mapping, path: &str) -> Result<Vec<String>> {
        let mut flags = Vec::new();
        self.collect(section, values, path, &mut flags)?;
        flags.sort();
        Ok(flags)
    }

    fn collect(
        &self,
        section: &str,
        values: &Mapping,
        path: &str,
        out: &mut Vec<String>,
    ) -> Result<()> {
        for field in self.section(section) {
            if field.key == "-" {
                continue;
            }
            let Some(value) = values.get(field.key.as_str()) else {
                continue;
            };
            if value.is_null() {
                continue;
            }
            let field_path = format!("{path}.{}", field.key);
            if let FieldType::Nested(nested) = &field.field_type {
                let mapping = value
                    .as_mapping()
                    .ok_or_else(|| anyhow!("`{field_path}` must be a mapping"))?;
                self.collect(nested, mapping, &field_path, out)?;
                continue;
            }
            let Some(flag) = &field.flag else {
                continue;
            };
            for flag_value in flag_values(field, value, &field_path)? {
                if field.flag_empty.as_deref() == Some(flag_value.as_str()) {
                    continue;
                }
                if flag_value.is_empty() && !field.include_empty {
                    continue;
                }
                out.push(format!("--{flag}={flag_value}"));
            }
        }
        Ok(())
    }
}

/// The value(s) of one field: one per flag occurrence (several only for `repeat` lists).
fn flag_values(field: &FlagField, value: &Value, path: &str) -> Result<Vec<String>> {
    let one = |v: String| Ok(vec![v]);
    match &field.field_type {
        FieldType::String => one(expect_string(value, path)?.to_owned()),
        FieldType::Bool => match value {
            Value::Bool(b) => one(b.to_string()),
            _ => Err(anyhow!("`{path}` must be true or false")),
        },
        FieldType::Int => match value {
            Value::Number(n) if n.is_i64() || n.is_u64() => one(n.to_string()),
            _ => Err(anyhow!("`{path}` must be an integer")),
        },
        FieldType::StringList => {
            let items = value
                .as_sequence()
                .ok_or_else(|| anyhow!("`{path}` must be a list of strings"))?
                .iter()
                .map(|item| expect_string(item, path).map(str::to_owned))
                .collect::<Result<Vec<_>>>()?;
            if items.is_empty() {
                Ok(Vec::new())
            } else if field.repeat {
                Ok(items)
            } else {
                one(items.join(","))
            }
        }
        FieldType::StringMap => {
            let mapping = value
                .as_mapping()
                .ok_or_else(|| anyhow!("`{path}` must be a mapping of strings"))?;
            let mut pairs = mapping
                .iter()
                .map(|(k, v)| {
                    Ok(format!(
                        "{}={}",
                        scalar_text(k, path)?,
                        scalar_text(v, path)?
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            if pairs.is_empty() {
                return Ok(Vec::new());
            }
            pairs.sort();
            one(pairs.join(","))
        }
        FieldType::Duration => {
            let text = expect_string(value, path)?;
            let nanos = parse_go_duration(text).map_err(|e| {
                anyhow!("`{path}`: `{}` is not a duration: {e}", text.escape_debug())
            })?;
            one(format_go_duration(nanos))
        }
        FieldType::Quantity => {
            let text = match value {
                Value::String(s) => s.trim().to_owned(),
                Value::Number(n) => n.to_string(),
                _ => bail!("`{path}` must be a quantity such as `100m` or `2`"),
            };
            let decimal = format_quantity(&text).map_err(|e| {
                anyhow!("`{path}`: `{}` is not a quantity: {e}", text.escape_debug())
            })?;
            one(decimal)
        }
        FieldType::Nested(_) => Ok(Vec::new()),
    }
}

fn expect_string<'a>(value: &'a Value, path: &str) -> Result<&'a str> {
    value
        .as_str()
        .ok_or_else(|| anyhow!("`{path}` must be a string"))
}

/// Map keys and values: strings, and also booleans and integers by their canonical text
/// (`featureGates: {Foo: true}` is common).
fn scalar_text(value: &Value, path: &str) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        _ => Err(anyhow!("`{path}` must map strings to strings")),
    }
}

/// A Kubernetes quantity (`500m`, `1.5`, `2k`, `1Ki`, `1e3`) as kOps' flag builder prints it:
/// `resource.Quantity.AsDec().String()`, the decimal form a component's float flag parses
/// (`500m` → `0.500`, `2k` → `2000`). Follows apimachinery's `ParseQuantity`: the digits keep
/// their scale, and a value it cannot hold exactly in 64 bits is rounded up to nano units.
pub(crate) fn format_quantity(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("empty".into());
    }
    if text == "0" {
        return Ok("0".into());
    }
    let parsed = QuantityText::parse(text)?;
    let (base, exponent) = quantity_suffix(parsed.suffix)
        .ok_or_else(|| format!("unknown suffix `{}`", parsed.suffix))?;
    let digits = parsed.num.len() as i32 + parsed.denom.len() as i32;
    // apimachinery's fast path: the value fits an int64 at a scale of nano units or coarser.
    let (precision, mut scale, mantissa) = if base == 10 {
        (18 - digits, exponent, 1i128)
    } else if parsed.denom.is_empty() {
        let precision = 15 - parsed.num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
        (precision, 0, 1i128 << exponent)
    } else {
        (-1, 0, 1)
    };
    if precision >= 0 {
        scale -= parsed.denom.len() as i32;
        if scale >= -9 {
            let shifted: i128 = format!("{}{}", parsed.num, parsed.denom)
                .parse()
                .map_err(|_| "not a number".to_owned())?;
            let value = shifted * mantissa;
            if value <= i128::from(i64::MAX) {
                return Ok(decimal_string(
                    if parsed.positive { value } else { -value },
                    -scale,
                ));
            }
        }
    }
    // The exact path: the digits as written, the suffix applied, rounded up to nano units.
    let too_large = || "too large".to_owned();
    let mut unscaled: i128 = format!("{}{}", parsed.num, parsed.denom)
        .parse()
        .map_err(|_| too_large())?;
    let mut dec_scale = parsed.denom.len() as i32;
    if base == 10 {
        dec_scale -= exponent;
    } else {
        unscaled = unscaled
            .checked_mul(1i128 << exponent)
            .ok_or_else(too_large)?;
    }
    if unscaled != 0 {
        if dec_scale > 9 {
            let divisor = 10i128
                .checked_pow((dec_scale - 9) as u32)
                .ok_or_else(too_large)?;
            let rounded_up = unscaled % divisor != 0;
            unscaled = unscaled / divisor + i128::from(rounded_up);
        } else {
            let factor = 10i128
                .checked_pow((9 - dec_scale) as u32)
                .ok_or_else(too_large)?;
            unscaled = unscaled.checked_mul(factor).ok_or_else(too_large)?;
        }
        dec_scale = 9;
    }
    if base == 2 && unscaled > i128::from(i64::MAX) * 1_000_000_000 {
        // apimachinery caps binary quantities at 2^63-1.
        return Ok(decimal_string(
            if parsed.positive {
                i128::from(i64::MAX)
            } else {
                -i128::from(i64::MAX)
            },
            0,
        ));
    }
    Ok(decimal_string(
        if parsed.positive { unscaled } else { -unscaled },
        dec_scale,
    ))
}

/// The parts of a quantity's text, as apimachinery's `parseQuantityString` splits it.
struct QuantityText<'a> {
    positive: bool,
    /// Integer digits, leading zeros removed (`"0"` when none are left).
    num: &'a str,
    /// Fraction digits.
    denom: &'a str,
    suffix: &'a str,
}

impl<'a> QuantityText<'a> {
    fn parse(text: &'a str) -> Result<Self, String> {
        let bytes = text.as_bytes();
        let (positive, mut pos) = match bytes.first() {
            Some(b'-') => (false, 1),
            Some(b'+') => (true, 1),
            _ => (true, 0),
        };
        while pos < bytes.len() && bytes[pos] == b'0' {
            pos += 1;
        }
        let digits_end = |from: usize| {
            (from..bytes.len())
                .find(|&i| !bytes[i].is_ascii_digit())
                .unwrap_or(bytes.len())
        };
        let num_end = digits_end(pos);
        let num = if num_end == pos {
            "0"
        } else {
            &text[pos..num_end]
        };
        pos = num_end;
        let mut denom = "";
        if bytes.get(pos) == Some(&b'.') {
            let end = digits_end(pos + 1);
            denom = &text[pos + 1..end];
            pos = end;
        }
        let suffix = &text[pos..];
        // A suffix is letters from `eEinumkKMGTP`, then for an exponent a sign and digits.
        let letters = suffix
            .find(|c: char| !"eEinumkKMGTP".contains(c))
            .unwrap_or(suffix.len());
        let rest = &suffix[letters..];
        let rest = rest.strip_prefix(['-', '+']).unwrap_or(rest);
        if !rest.bytes().all(|b| b.is_ascii_digit()) {
            return Err("not a number with an optional suffix".into());
        }
        Ok(Self {
            positive,
            num,
            denom,
            suffix,
        })
    }
}

/// A suffix's base and exponent: decimal SI (`m`, `k`, `M`, …), binary SI (`Ki`, `Mi`, …) or a
/// decimal exponent (`e3`, `E-2`).
fn quantity_suffix(suffix: &str) -> Option<(i32, i32)> {
    let decimal = [
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("", 0),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ];
    let binary = [
        ("Ki", 10),
        ("Mi", 20),
        ("Gi", 30),
        ("Ti", 40),
        ("Pi", 50),
        ("Ei", 60),
    ];
    if let Some((_, e)) = decimal.iter().find(|(s, _)| *s == suffix) {
        return Some((10, *e));
    }
    if let Some((_, e)) = binary.iter().find(|(s, _)| *s == suffix) {
        return Some((2, *e));
    }
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    (!exponent.is_empty())
        .then(|| exponent.parse::<i32>().ok())
        .flatten()
        .filter(|e| e.abs() <= 36)
        .map(|e| (10, e))
}

/// `unscaled × 10^-scale` as Go's `inf.Dec.String()` prints it: the scale's digits after the
/// point (`500, 3` → `0.500`), zeros appended for a negative scale (`2, -3` → `2000`).
fn decimal_string(unscaled: i128, scale: i32) -> String {
    let sign = if unscaled < 0 { "-" } else { "" };
    let digits = unscaled.unsigned_abs().to_string();
    if scale <= 0 {
        if unscaled == 0 {
            return digits;
        }
        return format!(
            "{sign}{digits}{}",
            "0".repeat(scale.unsigned_abs() as usize)
        );
    }
    let scale = scale as usize;
    if digits.len() <= scale {
        format!("{sign}0.{}{digits}", "0".repeat(scale - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(digits.len() - scale);
        format!("{sign}{whole}.{fraction}")
    }
}

/// Parses a Go duration (`1m30s`, `1.5h`, `300ms`, `-2s`, `0`) into nanoseconds.
pub fn parse_go_duration(text: &str) -> Result<i128, String> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err("empty".into());
    }
    let mut total: f64 = 0.0;
    let mut exact: i128 = 0;
    let mut all_integer = true;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or("a number without a unit")?;
        let (number, tail) = rest.split_at(number_end);
        if number.is_empty() || number == "." {
            return Err("expected a number".into());
        }
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err("a number without a unit".into()),
            other => return Err(format!("unknown unit `{other}`")),
        };
        if number.contains('.') {
            all_integer = false;
            let value: f64 = number
                .parse()
                .map_err(|_| format!("bad number `{number}`"))?;
            total += value * scale as f64;
        } else {
            let value: i128 = number
                .parse()
                .map_err(|_| format!("bad number `{number}`"))?;
            exact = exact
                .checked_add(value.checked_mul(scale).ok_or("too large")?)
                .ok_or("too large")?;
        }
        rest = tail;
    }
    let nanos = if all_integer {
        exact
    } else {
        exact + total.round() as i128
    };
    if nanos > i128::from(i64::MAX) {
        return Err("too large".into());
    }
    Ok(if negative { -nanos } else { nanos })
}

/// Formats nanoseconds as Go's `time.Duration.String()` does: `1m0s`, `0s`, `1.5s`, `300ms`.
pub fn format_go_duration(nanos: i128) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, scale) = if n < 1_000 {
            ("ns", 1)
        } else if n < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", decimal(n, scale));
    }
    let hours = n / 3_600_000_000_000;
    let minutes = (n / 60_000_000_000) % 60;
    let seconds = decimal(n % 60_000_000_000, 1_000_000_000);
    let mut out = String::from(sign);
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{seconds}s"));
    out
}

/// `value / scale` with the fraction's trailing zeros trimmed (`1500, 1000` → `1.5`).
fn decimal(value: u128, scale: u128) -> String {
    let whole = value / scale;
    let fraction = value % scale;
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = scale.to_string().len() - 1;
    let text = format!("{fraction:0digits$}");
    format!("{whole}.{}", text.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(yaml: &str) -> Mapping {
        yaml_serde::from_str(yaml).unwrap()
    }

    fn build(section: &str, yaml: &str) -> Result<Vec<String>> {
        FlagTable::builtin().build(section, &mapping(yaml), "spec.x")
    }

    #[test]
    fn the_builtin_table_parses() {
        let table = FlagTable::builtin();
        assert!(table.section("KubeAPIServerConfig").count() > 100);
        let v = table
            .section("KubeAPIServerConfig")
            .find(|f| f.key == "logLevel")
            .unwrap();
        assert_eq!(v.flag.as_deref(), Some("v"));
        assert_eq!(v.flag_empty.as_deref(), Some("0"));
    }

    #[test]
    fn values_follow_the_kops_rules() {
        let flags = build(
            "KubeAPIServerConfig",
            "logLevel: 2\nanonymousAuth: false\nallowPrivileged: true\napiServerCount: 3\n\
             enableAdmissionPlugins: [A, B]\nfeatureGates: {Z: \"true\", A: \"false\"}\n\
             serviceAccountKeyFile: [/a, /b]\nimage: ignored\ncpuRequest: 150m\n\
             etcdServersOverrides: []\nunknownField: 1\nbindAddress: null\n",
        )
        .unwrap();
        assert_eq!(
            flags,
            [
                "--allow-privileged=true",
                "--anonymous-auth=false",
                "--apiserver-count=3",
                "--enable-admission-plugins=A,B",
                "--feature-gates=A=false,Z=true",
                "--service-account-key-file=/a",
                "--service-account-key-file=/b",
                "--v=2",
            ]
        );
    }

    #[test]
    fn flag_empty_values_are_omitted_and_nested_sections_contribute() {
        assert_eq!(
            build("KubeAPIServerConfig", "logLevel: 0\n").unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            build(
                "KubeControllerManagerConfig",
                "leaderElection: {leaderElect: true, leaderElectLeaseDuration: 15s}\n\
                 attachDetachReconcileSyncPeriod: 60s\nconfigureCloudRoutes: false\n"
            )
            .unwrap(),
            [
                "--attach-detach-reconcile-sync-period=1m0s",
                "--configure-cloud-routes=false",
                "--leader-elect-lease-duration=15s",
                "--leader-elect=true",
            ]
        );
    }

    #[test]
    fn wrong_types_name_the_field() {
        let err = build("KubeAPIServerConfig", "logLevel: two\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("`spec.x.logLevel` must be an integer"),
            "{err}"
        );
        let err = build("KubeAPIServerConfig", "anonymousAuth: \"no\"\n").unwrap_err();
        assert!(err.to_string().contains("anonymousAuth"), "{err}");
        let err = build(
            "KubeControllerManagerConfig",
            "attachDetachReconcileSyncPeriod: soon\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("not a duration"), "{err}");
    }

    #[test]
    fn quantities_are_printed_as_kops_prints_them() {
        for (input, expected) in [
            ("500m", "0.500"),
            ("3140m", "3.140"),
            ("1.5", "1.5"),
            ("1.50", "1.50"),
            ("0.5", "0.5"),
            ("2k", "2000"),
            ("2", "2"),
            ("0", "0"),
            ("100", "100"),
            ("1e3", "1000"),
            ("1E-2", "0.01"),
            ("1Ki", "1024"),
            ("1.5Ki", "1536.000000000"),
            ("10u", "0.000010"),
            ("12n", "0.000000012"),
            ("-2", "-2"),
            ("-500m", "-0.500"),
            ("+5", "5"),
            ("007", "7"),
            ("1.0000000001", "1.000000001"),
            ("0.1n", "0.000000001"),
            ("m", "0.000"),
            ("123456789012345678901", "123456789012345678901.000000000"),
        ] {
            assert_eq!(format_quantity(input).as_deref(), Ok(expected), "{input}");
        }
        for bad in ["", "1x", "1.2.3", "5 m", "1e", "--1", "1Kib"] {
            assert!(format_quantity(bad).is_err(), "{bad}");
        }
        let flags = build("KubeControllerManagerConfig", "kubeAPIQPS: 500m\n").unwrap();
        assert_eq!(flags, ["--kube-api-qps=0.500"]);
        let flags = build("KubeControllerManagerConfig", "kubeAPIQPS: 20\n").unwrap();
        assert_eq!(flags, ["--kube-api-qps=20"]);
    }

    #[test]
    fn go_durations_round_trip() {
        for (input, expected) in [
            ("1m0s", "1m0s"),
            ("60s", "1m0s"),
            ("0s", "0s"),
            ("0", "0s"),
            ("2h", "2h0m0s"),
            ("1.5s", "1.5s"),
            ("90m", "1h30m0s"),
            ("300ms", "300ms"),
            ("1500ms", "1.5s"),
            ("10us", "10µs"),
            ("-5s", "-5s"),
            ("1h0m0.5s", "1h0m0.5s"),
        ] {
            let nanos = parse_go_duration(input).unwrap();
            assert_eq!(format_go_duration(nanos), expected, "{input}");
        }
        for bad in ["", "5", "1x", "s", "1.2.3s"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }
}
