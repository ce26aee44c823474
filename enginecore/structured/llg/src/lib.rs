//! Re-exports LLGuidance so that its C API (llguidance.h) is in this
//! static library.
pub use llguidance;
