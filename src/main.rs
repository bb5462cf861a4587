//! The `benchledger` command; everything lives in the library.

fn main() -> std::process::ExitCode {
    benchledger::cli::main()
}
