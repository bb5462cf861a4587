//! Readers of the evidence files Harbor and BitRouter write.
