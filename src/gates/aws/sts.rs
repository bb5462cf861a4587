//! STS GetCallerIdentity: who the session's provider really is (GATE-1).

use super::session::Session;
use crate::gates::rules::{AwsError, CallerIdentity};

impl Session {
    /// STS GetCallerIdentity.
    pub fn caller_identity(&self) -> Result<CallerIdentity, AwsError> {
        let out = self
            .rt
            .block_on(self.sts.get_caller_identity().send())
            .map_err(|e| AwsError::of("sts GetCallerIdentity", e))?;
        match (out.account(), out.arn()) {
            (Some(a), Some(arn)) => Ok(CallerIdentity {
                account: a.to_string(),
                arn: arn.to_string(),
            }),
            _ => Err(AwsError(
                "sts GetCallerIdentity answered without account or arn".into(),
            )),
        }
    }
}
