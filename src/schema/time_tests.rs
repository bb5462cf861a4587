use super::*;

const NS: i128 = 1_000_000_000;

fn ns(text: &str) -> i128 {
    parse_timestamp_ns(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

fn why(result: std::result::Result<impl std::fmt::Debug, TimeError>) -> String {
    match result {
        Err(TimeError::Invalid(why)) => why,
        other => panic!("expected an invalid time, got {other:?}"),
    }
}

#[test]
fn known_instants() {
    assert_eq!(rfc3339_utc_ns(0), "1970-01-01T00:00:00.000000000Z");
    assert_eq!(
        rfc3339_utc_ns(951_782_400_000_000_001),
        "2000-02-29T00:00:00.000000001Z"
    );
    assert_eq!(
        rfc3339_utc_ns(1_796_000_000_123_456_789),
        "2026-11-30T00:53:20.123456789Z"
    );
    assert_eq!(rfc3339_utc_ns(u64::MAX), "2554-07-21T23:34:33.709551615Z");
}

#[test]
fn whole_seconds_round_down() {
    assert_eq!(rfc3339_utc_sec(0), "1970-01-01T00:00:00Z");
    assert_eq!(
        rfc3339_utc_sec(1_796_000_000_999_999_999),
        "2026-11-30T00:53:20Z"
    );
    assert_eq!(rfc3339_utc_sec(u64::MAX), "2554-07-21T23:34:33Z");
}

#[test]
fn the_formatter_and_the_parser_agree() {
    for value in [
        0u64,
        1,
        999_999_999,
        951_782_400_000_000_001,
        1_796_000_000_123_456_789,
        4_107_542_399_999_999_999,
        u64::MAX,
    ] {
        let text = rfc3339_utc_ns(value);
        assert_eq!(ns(&text), i128::from(value), "{text}");
        assert_eq!(parse_rfc3339_ns(&text), Some(i128::from(value)));
        assert_eq!(check_timestamp(&text, TimeForm::UtcZ), Ok(()));
    }
}

#[test]
fn days_are_checked_against_their_month() {
    assert_eq!(
        why(parse_date("2026-02-31")),
        "2026-02-31 is not a date: february 2026 has 28 days"
    );
    // 2026 is not a leap year; 2028 is; 2000 is (divisible by 400); 2100 is not.
    assert_eq!(
        why(parse_date("2026-02-29")),
        "2026-02-29 is not a date: february 2026 has 28 days"
    );
    assert!(parse_date("2028-02-29").is_ok());
    assert!(parse_date("2000-02-29").is_ok());
    assert!(parse_date("2100-02-29").is_err());
    assert_eq!(
        why(parse_date("2026-04-31")),
        "2026-04-31 is not a date: april 2026 has 30 days"
    );
    assert_eq!(why(parse_date("2026-13-01")), "month 13 is outside 01..=12");
    assert_eq!(why(parse_date("2026-00-10")), "month 00 is outside 01..=12");
    assert!(parse_date("2026-01-00").is_err());
    let d = parse_date("2028-02-29").unwrap();
    assert_eq!((d.year(), d.month(), d.day()), (2028, 2, 29));
    for form in [TimeForm::Rfc3339, TimeForm::UtcZ] {
        assert!(check_timestamp("2026-02-31T00:00:00Z", form).is_err());
        assert!(check_timestamp("2026-02-29T00:00:00Z", form).is_err());
        assert_eq!(check_timestamp("2028-02-29T00:00:00Z", form), Ok(()));
    }
    assert!(check_timestamp("2026-02-31T00:00:00", TimeForm::Naive).is_err());
    assert_eq!(ns("2028-02-29T00:00:00Z"), 1_835_395_200 * NS);
    assert_eq!(parse_rfc3339_ns("2026-02-31T00:00:00Z"), None);
}

#[test]
fn dates_are_exactly_yyyy_mm_dd() {
    for bad in [
        "",
        "2026-1-01",
        "2026-01-1",
        "26-01-01",
        "2026/01/01",
        "2026-01-01T00:00:00Z",
        "2026-01-01 ",
        " 2026-01-01",
        "２０２６-01-01",
        "+2026-01-01",
    ] {
        assert_eq!(parse_date(bad), Err(TimeError::Form), "{bad:?}");
    }
    assert!(parse_date("0000-01-01").is_ok());
    assert!(parse_date("9999-12-31").is_ok());
}

#[test]
fn hour_24_and_other_out_of_range_fields_are_refused() {
    assert_eq!(
        why(parse_timestamp_ns("2026-03-01T24:00:00Z")),
        "hour 24 is outside 00..=23"
    );
    assert_eq!(
        why(parse_timestamp_ns("2026-03-01T23:60:00Z")),
        "minute 60 is outside 00..=59"
    );
    assert_eq!(
        why(parse_timestamp_ns("2026-03-01T23:59:61Z")),
        "second 61 is outside 00..=60"
    );
    assert!(check_timestamp("2026-03-01T24:00:00", TimeForm::Naive).is_err());
    assert_eq!(parse_rfc3339_ns("2026-03-01T24:00:00Z"), None);
}

#[test]
fn leap_seconds_only_at_the_end_of_a_utc_month() {
    // 2016-12-31T23:59:60Z was a real leap second: accepted, read as :59.
    let leap = ns("2016-12-31T23:59:60Z");
    assert_eq!(leap, ns("2016-12-31T23:59:59Z"));
    assert_eq!(ns("2016-12-31T23:59:60.5Z"), leap + NS / 2);
    // The same UTC minute written with an offset.
    assert_eq!(ns("2017-01-01T00:59:60+01:00"), leap);
    assert_eq!(ns("2016-12-31T18:59:60-05:00"), leap);
    assert_eq!(ns("2015-06-30T23:59:60Z"), ns("2015-06-30T23:59:59Z"));
    for misplaced in [
        "2026-03-01T12:30:60Z",
        "2016-12-30T23:59:60Z",
        "2016-12-31T23:58:60Z",
        "2016-12-31T23:59:60+01:00",
    ] {
        assert_eq!(
            why(parse_timestamp_ns(misplaced)),
            "second 60 (a leap second) is only valid at 23:59:60 utc on the last day of a month",
            "{misplaced}"
        );
        assert_eq!(parse_rfc3339_ns(misplaced), None, "{misplaced}");
    }
    // A naive time cannot be placed in UTC.
    assert!(
        why(check_timestamp("2016-12-31T23:59:60", TimeForm::Naive)).contains("without an offset")
    );
    assert_eq!(
        check_timestamp("2016-12-31T23:59:60Z", TimeForm::UtcZ),
        Ok(())
    );
}

#[test]
fn offsets() {
    let utc = ns("2026-11-30T00:53:20.123456789Z");
    assert_eq!(ns("2026-11-30T01:53:20.123456789+01:00"), utc);
    assert_eq!(ns("2026-11-29T19:23:20.123456789-05:30"), utc);
    assert_eq!(ns("2026-11-30T00:53:20.123456789+00:00"), utc);
    assert_eq!(ns("2026-11-30T00:53:20.123456789-00:00"), utc);
    assert_eq!(ns("2026-11-30T23:59:20.123456789+23:06"), utc);
    assert_eq!(
        why(parse_timestamp_ns("2026-11-30T00:53:20+24:00")),
        "offset hour 24 is outside 00..=23"
    );
    assert_eq!(
        why(parse_timestamp_ns("2026-11-30T00:53:20+01:60")),
        "offset minute 60 is outside 00..=59"
    );
    for bad in [
        "2026-11-30T00:53:20+0100",
        "2026-11-30T00:53:20+01",
        "2026-11-30T00:53:20 +01:00",
        "2026-11-30T00:53:20+1:00",
        "2026-11-30T00:53:20UTC",
        "2026-11-30T00:53:20Z[UTC]",
        "2026-11-30T00:53:20+01:00[Europe/Paris]",
    ] {
        assert_eq!(parse_timestamp_ns(bad), Err(TimeError::Form), "{bad}");
        assert_eq!(parse_rfc3339_ns(bad), None, "{bad}");
    }
    // The forms: UtcZ takes only Z, Naive no zone, Rfc3339 both.
    assert!(check_timestamp("2026-03-01T12:00:26+00:00", TimeForm::UtcZ).is_err());
    assert!(check_timestamp("2026-03-01T12:00:26Z", TimeForm::Naive).is_err());
    assert!(check_timestamp("2026-03-01T12:00:26", TimeForm::Rfc3339).is_err());
    assert_eq!(
        check_timestamp("2026-03-01T12:00:26", TimeForm::Naive),
        Ok(())
    );
}

#[test]
fn fractional_digits() {
    let base = ns("2026-03-01T12:00:00Z");
    assert_eq!(ns("2026-03-01T12:00:00.5Z"), base + 500_000_000);
    assert_eq!(ns("2026-03-01T12:00:00.000000001Z"), base + 1);
    assert_eq!(ns("2026-03-01T12:00:00.123456789Z"), base + 123_456_789);
    // A fraction needs a digit, and the strict forms take at most nine.
    for bad in [
        "2026-03-01T12:00:00.Z",
        "2026-03-01T12:00:00.1234567891Z",
        "2026-03-01T12:00:00,5Z",
    ] {
        assert_eq!(parse_timestamp_ns(bad), Err(TimeError::Form), "{bad}");
    }
    assert!(check_timestamp("2026-03-01T12:00:26.500000Z", TimeForm::UtcZ).is_ok());
    assert!(check_timestamp("2026-03-01T12:00:00.1234567891", TimeForm::Naive).is_err());
    // The report's drop-in reads any length, cut to nanoseconds.
    assert_eq!(
        parse_rfc3339_ns("2026-03-01T12:00:00.1234567891999Z"),
        Some(base + 123_456_789)
    );
    assert_eq!(parse_rfc3339_ns("2026-03-01T12:00:00.Z"), None);
}

#[test]
fn separators_and_case() {
    // The strict forms: an uppercase T and Z only.
    for bad in [
        "2026-03-01t12:00:00Z",
        "2026-03-01 12:00:00Z",
        "2026-03-01T12:00:00z",
        "2026-03-01T12-00-00Z",
        "2026-03-01T12:00Z",
        "2026-03-01T12:00:00ZZ",
        "yesterday",
        "",
    ] {
        assert_eq!(parse_timestamp_ns(bad), Err(TimeError::Form), "{bad:?}");
    }
    // The report's drop-in: what RFC 3339 itself allows.
    let base = ns("2026-03-01T12:00:00Z");
    for ok in [
        "2026-03-01t12:00:00Z",
        "2026-03-01 12:00:00Z",
        "2026-03-01T12:00:00z",
    ] {
        assert_eq!(parse_rfc3339_ns(ok), Some(base), "{ok}");
    }
    assert_eq!(parse_rfc3339_ns("2026-03-01T12:00:00"), None);
    assert_eq!(parse_rfc3339_ns("not a time"), None);
}

#[test]
fn bounds() {
    assert_eq!(ns("1970-01-01T00:00:00Z"), 0);
    assert_eq!(ns("1969-12-31T23:59:59.999999999Z"), -1);
    assert_eq!(ns("0000-01-01T00:00:00Z"), -62_167_219_200 * NS);
    // jiff's last instant, and one nanosecond past it.
    assert_eq!(
        ns("9999-12-30T22:00:00.999999999Z"),
        253_402_207_200 * NS + 999_999_999
    );
    assert_eq!(
        ns("9999-12-30T23:00:00.999999999+01:00"),
        ns("9999-12-30T22:00:00.999999999Z")
    );
    for past in [
        "9999-12-30T22:00:01Z",
        "9999-12-31T23:59:59Z",
        "9999-12-30T22:00:00-00:01",
    ] {
        assert_eq!(
            why(parse_timestamp_ns(past)),
            "the instant is outside the representable range -009999-01-02T01:59:59Z to 9999-12-30T22:00:00.999999999Z",
            "{past}"
        );
    }
    // A date at the end of year 9999 is still a date, and an offset at the
    // first instant of year 0 stays in range.
    assert!(parse_date("9999-12-31").is_ok());
    assert!(check_timestamp("9999-12-31T23:59:59", TimeForm::Naive).is_ok());
    assert!(parse_timestamp_ns("0000-01-01T00:00:00+23:59").is_ok());
    // The report's drop-in matches the old arithmetic on ordinary inputs.
    assert_eq!(parse_rfc3339_ns("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        parse_rfc3339_ns("2026-11-30T01:53:20.123456789+01:00"),
        Some(1_796_000_000 * NS + 123_456_789)
    );
    assert_eq!(
        parse_rfc3339_ns("2000-02-29T00:00:00.5Z"),
        Some(951_782_400 * NS + NS / 2)
    );
}

#[test]
fn the_manifest_drop_in_names_source_and_field() {
    assert!(check_date("m.toml", "f", "2026-11-30").is_ok());
    assert_eq!(
        check_date("m.toml", "pricing.effective_from", "2026-1-30")
            .unwrap_err()
            .to_string(),
        "m.toml: field pricing.effective_from: must be a date YYYY-MM-DD, got \"2026-1-30\""
    );
    assert_eq!(
        check_date("m.toml", "pricing.effective_to", "2026-02-31")
            .unwrap_err()
            .to_string(),
        "m.toml: field pricing.effective_to: must be a date YYYY-MM-DD, got \"2026-02-31\" (2026-02-31 is not a date: february 2026 has 28 days)"
    );
    assert_eq!(
        check_date("m", "f", "x").unwrap_err().class(),
        crate::error::ExitClass::BadInput
    );
}

#[test]
fn no_text_panics() {
    // Short, cut and non-ASCII texts at every length.
    let full = "2016-12-31T23:59:60.123456789+01:00";
    for end in 0..=full.len() {
        let cut = &full[..end];
        let _ = parse_timestamp_ns(cut);
        let _ = parse_rfc3339_ns(cut);
        let _ = parse_date(cut);
        for form in [TimeForm::Rfc3339, TimeForm::UtcZ, TimeForm::Naive] {
            let _ = check_timestamp(cut, form);
        }
    }
    for odd in ["é", "2026-é1-01", "2026-01-01Té", "2026-01-01T00:00:00.é"] {
        assert!(parse_timestamp_ns(odd).is_err());
        assert!(parse_date(odd).is_err());
    }
}
