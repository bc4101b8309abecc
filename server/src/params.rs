//! Query parameters: parsed from the raw query string, every one bounded
//! and validated; unknown parameters are refused, so a typo is an error and
//! not a silent default.

use std::collections::HashMap;

use pcct::Metric;

use crate::error::ApiError;

/// Longest query string accepted.
pub const MAX_QUERY_BYTES: usize = 4096;

/// The parameters of one request.
pub struct Params {
    values: HashMap<String, String>,
}

impl Params {
    /// Parses `raw` and refuses names outside `allowed`, repeated names and
    /// oversized queries.
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> Result<Params, ApiError> {
        let raw = raw.unwrap_or("");
        if raw.len() > MAX_QUERY_BYTES {
            return Err(ApiError::bad_request(format!("the query string is longer than {MAX_QUERY_BYTES} bytes")));
        }
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw)
            .map_err(|_| ApiError::bad_request("the query string is not valid URL encoding"))?;
        let mut values = HashMap::new();
        for (name, value) in pairs {
            if !allowed.contains(&name.as_str()) {
                let known = if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") };
                return Err(ApiError::parameter(&name, format!("unknown parameter; this route takes: {known}")));
            }
            if values.insert(name.clone(), value).is_some() {
                return Err(ApiError::parameter(&name, "given more than once"));
            }
        }
        Ok(Params { values })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A whole number in `low..=high`, or `default` when absent.
    pub fn integer(&self, name: &str, low: u64, high: u64, default: u64) -> Result<u64, ApiError> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => text
                .parse::<u64>()
                .ok()
                .filter(|value| (low..=high).contains(value))
                .ok_or_else(|| ApiError::parameter(name, format!("must be a whole number from {low} to {high}"))),
        }
    }

    /// A number in `low..=high`, or `default` when absent.
    pub fn number(&self, name: &str, low: f64, high: f64, default: f64) -> Result<f64, ApiError> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => text
                .parse::<f64>()
                .ok()
                .filter(|value| value.is_finite() && *value >= low && *value <= high)
                .ok_or_else(|| ApiError::parameter(name, format!("must be a number from {low} to {high}"))),
        }
    }

    /// One of `choices`, or `default` when absent.
    pub fn choice<'a>(&self, name: &str, choices: &[&'a str], default: &'a str) -> Result<&'a str, ApiError> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => choices
                .iter()
                .copied()
                .find(|choice| *choice == text)
                .ok_or_else(|| ApiError::parameter(name, format!("must be one of: {}", choices.join(", ")))),
        }
    }

    /// The resource asked for, `default` when absent (see [`Params::resource`]).
    pub fn metric(&self, default: Metric) -> Result<Metric, ApiError> {
        Ok(self.resource()?.unwrap_or(default))
    }

    /// The resource asked for, if any: `resource=` or `metric=` (two names
    /// of one parameter: the routes had `metric=` before allocations and
    /// locks made it a resource; not both), any of [`Metric::ALL`] by its
    /// name (`cpu` and `wall` too).
    pub fn resource(&self) -> Result<Option<Metric>, ApiError> {
        let (name, text) = match (self.get("resource"), self.get("metric")) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => {
                return Err(ApiError::parameter(
                    "resource",
                    "give resource or metric (one parameter, two names), not both",
                ))
            }
            (Some(text), None) => ("resource", text),
            (None, Some(text)) => ("metric", text),
        };
        Metric::parse(text)
            .map(Some)
            .ok_or_else(|| ApiError::parameter(name, format!("must be one of: {}", Metric::accepted())))
    }
}

/// The names the resource parameter goes by (see [`Params::resource`]).
pub const RESOURCE: [&str; 2] = ["resource", "metric"];

/// `names` and the resource parameter's, for [`Params::parse`].
pub fn with_resource(names: &[&'static str]) -> Vec<&'static str> {
    names.iter().copied().chain(RESOURCE).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_unknown_names_and_repeats_are_errors() {
        let params = Params::parse(Some("limit=5&by=total"), &["limit", "by"]).unwrap();
        assert_eq!(params.integer("limit", 1, 10, 3).unwrap(), 5);
        assert_eq!(params.choice("by", &["self", "total"], "self").unwrap(), "total");
        assert_eq!(params.integer("absent", 1, 10, 3).unwrap(), 3);
        let error = Params::parse(Some("limt=5"), &["limit"]).err().unwrap();
        assert_eq!(error.parameter.as_deref(), Some("limt"));
        assert!(Params::parse(Some("limit=1&limit=2"), &["limit"]).is_err());
        let params = Params::parse(Some("limit=0"), &["limit"]).unwrap();
        assert_eq!(params.integer("limit", 1, 10, 3).unwrap_err().parameter.as_deref(), Some("limit"));
        let long = "a".repeat(MAX_QUERY_BYTES + 1);
        assert!(Params::parse(Some(&long), &[]).is_err());
    }

    #[test]
    fn the_resource_goes_by_two_names_takes_every_metric_and_says_what_it_allows() {
        let allowed = with_resource(&[]);
        for metric in Metric::ALL {
            for name in RESOURCE {
                let params = Params::parse(Some(&format!("{name}={}", metric.name())), &allowed).unwrap();
                assert_eq!(params.resource().unwrap(), Some(metric));
            }
        }
        let params = Params::parse(Some("metric=cpu"), &allowed).unwrap();
        assert_eq!(params.metric(Metric::Samples).unwrap(), Metric::CpuNs);
        assert_eq!(Params::parse(None, &allowed).unwrap().metric(Metric::WallNs).unwrap(), Metric::WallNs);
        let error = Params::parse(Some("resource=bytes"), &allowed).unwrap().resource().unwrap_err();
        assert_eq!(error.parameter.as_deref(), Some("resource"));
        assert!(error.message.contains("alloc_bytes") && error.message.contains("lock_wait_ns"), "{}", error.message);
        let both = Params::parse(Some("resource=cpu&metric=cpu"), &allowed).unwrap().resource().unwrap_err();
        assert_eq!(both.parameter.as_deref(), Some("resource"));
    }
}
