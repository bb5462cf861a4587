//! The money rule of the human renderings: amounts to the cent, rounded
//! half away from zero, and a footnote wherever that rounding hides a
//! difference (two different amounts shown alike, or an amount that is not
//! zero shown as `$0.00`). The JSON form keeps exact micro-USD.

use std::collections::BTreeMap;

use super::numbers::{ratio_text, Money, Ratio};

/// One amount as shown: what it is and its exact text.
struct Shown {
    label: String,
    exact: String,
    zero: bool,
}

/// The amounts one table shows to the cent, by their cent text.
#[derive(Default)]
pub(crate) struct CentsNotes {
    shown: BTreeMap<String, Vec<Shown>>,
}

impl CentsNotes {
    /// `$303.60` for `money`, remembered as `label`.
    pub fn money(&mut self, label: &str, money: &Money) -> String {
        self.remember(
            label,
            &money.usd_cents,
            money.usd.clone(),
            money.micro_usd == 0,
        );
        format!("${}", money.usd_cents)
    }

    /// [`Self::money`], or `—` for no amount.
    pub fn maybe(&mut self, label: &str, money: Option<&Money>) -> String {
        money.map_or("—".into(), |money| self.money(label, money))
    }

    /// A USD ratio shown to the cent (its `text`: cost per success),
    /// remembered with its value to the micro-dollar.
    pub fn per(&mut self, label: &str, ratio: &Ratio) -> String {
        let exact = ratio_text(i128::from(ratio.num), i128::from(ratio.den), 6)
            .unwrap_or_else(|| ratio.text.clone());
        let exact = exact
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string();
        self.remember(label, &ratio.text, exact, ratio.num == 0);
        format!("${}", ratio.text)
    }

    fn remember(&mut self, label: &str, cents: &str, exact: String, zero: bool) {
        let entries = self.shown.entry(cents.to_string()).or_default();
        if !entries
            .iter()
            .any(|entry| entry.label == label && entry.exact == exact)
        {
            entries.push(Shown {
                label: label.to_string(),
                exact,
                zero,
            });
        }
    }

    /// The footnote, when rounding to the cent hides a difference: for each
    /// cent text shared by different amounts, or standing for an amount
    /// that is not zero as `$0.00`, every amount it stands for.
    pub fn footnote(&self) -> Option<String> {
        let hidden: Vec<String> = self
            .shown
            .iter()
            .filter(|(cents, entries)| {
                let mut exacts: Vec<&str> =
                    entries.iter().map(|entry| entry.exact.as_str()).collect();
                exacts.sort_unstable();
                exacts.dedup();
                exacts.len() > 1
                    || (cents.trim_start_matches('-') == "0.00"
                        && entries.iter().any(|entry| !entry.zero))
            })
            .map(|(cents, entries)| {
                let amounts: Vec<String> = entries
                    .iter()
                    .map(|entry| format!("{} ${}", entry.label, entry.exact))
                    .collect();
                format!("${cents} stands for {}", amounts.join(", "))
            })
            .collect();
        (!hidden.is_empty()).then(|| {
            format!(
                "Rounded to the cent (half away from zero): {}. The JSON form holds every amount in exact micro-USD.",
                hidden.join("; ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::numbers::{cents, cost_per_success};

    #[test]
    fn cents_round_half_away_from_zero() {
        assert_eq!(cents(303_600_000), "303.60");
        assert_eq!(cents(661_394_290), "661.39");
        assert_eq!(cents(5_000), "0.01");
        assert_eq!(cents(4_999), "0.00");
        assert_eq!(cents(0), "0.00");
        assert_eq!(cents(1_008_949), "1.01");
    }

    /// Two different amounts shown alike, and an amount that is not zero
    /// shown as $0.00, are footnoted with their exact amounts; equal
    /// amounts and distinct cents are not.
    #[test]
    fn a_footnote_appears_only_where_rounding_hides_a_difference() {
        let mut notes = CentsNotes::default();
        assert_eq!(notes.money("control", &Money::new(1_008_949)), "$1.01");
        notes.money("control again", &Money::new(1_008_949));
        notes.money("r1", &Money::new(451_750));
        assert_eq!(notes.footnote(), None);
        notes.per("r1 per success", &cost_per_success(451_750, 10).unwrap());
        notes.per("r2 per success", &cost_per_success(465_473, 10).unwrap());
        notes.money("qwen", &Money::new(1_761));
        notes.money("nothing", &Money::new(0));
        let text = notes.footnote().unwrap();
        assert_eq!(
            text,
            "Rounded to the cent (half away from zero): $0.00 stands for qwen $0.001761, nothing $0; $0.05 stands for r1 per success $0.045175, r2 per success $0.046547. The JSON form holds every amount in exact micro-USD."
        );
    }
}
