//! `export --parquet -o DIR [--append]`: the request, case and group tables as
//! one Parquet dataset partitioned by lineage, so a query over many ledgers
//! and lineages is one SQL statement (tools/analysis/):
//!
//! ```text
//! DIR/requests/lineage_key=lineage-<label>/part-<head>.parquet
//! DIR/cases/lineage_key=lineage-<label>/part-<head>.parquet
//! DIR/lineage_groups/lineage_key=lineage-<label>/part-<head>.parquet
//! ```
//!
//! The `lineage` column is in every file, a Parquet UTF-8 string, so every
//! reader types it as a string whatever its options (issue 31: Spark
//! inferred a partition `lineage=001` as the integer 1, colliding with
//! lineage `1`, and `2026-07-10` as a date, as DuckDB's partition reading
//! did). The Hive-style directories are for partition pruning only: their
//! key is `lineage_key`, not `lineage`, and their value starts with
//! `lineage-`, so even a reader that infers partition types reads a string.
//! The tables' `group` column is `group_name` here: GROUP is a reserved
//! word in every SQL dialect. `--append` onto a dataset of the old layout
//! (`lineage=<label>`) is refused. `--append` adds the lineages of another
//! ledger to an existing dataset; a lineage already in it is refused (its
//! rows would count twice). The files are written through the `parquet` crate's
//! low-level column writers (no Arrow): strings are UTF-8 byte arrays,
//! counts INT64, optional columns have definition levels.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use crate::cli::common::BadUsage;
use crate::method::projections::State;
use crate::report::{self, CaseRow, GroupTableRow, LedgerHead, RequestRow};

/// The tables of the dataset, each a directory of `lineage_key=` partitions.
pub(crate) const TABLES: [&str; 3] = ["requests", "cases", "lineage_groups"];

/// One column's values: definition levels and the present values.
enum Col {
    Str(Vec<i16>, Vec<ByteArray>),
    I64(Vec<i16>, Vec<i64>),
    I32(Vec<i16>, Vec<i32>),
    Bool(Vec<i16>, Vec<bool>),
}

fn strs<'a>(values: impl Iterator<Item = Option<&'a str>>) -> Col {
    let (mut levels, mut present) = (Vec::new(), Vec::new());
    for value in values {
        match value {
            Some(text) => {
                levels.push(1);
                present.push(ByteArray::from(text));
            }
            None => levels.push(0),
        }
    }
    Col::Str(levels, present)
}

/// An int64 column of counts; a count past int64's range is refused, never
/// clamped (Parquet has no unsigned 64-bit logical type every engine reads).
fn i64s(column: &str, values: impl Iterator<Item = Option<u64>>) -> anyhow::Result<Col> {
    let (mut levels, mut present) = (Vec::new(), Vec::new());
    for value in values {
        match value {
            Some(number) => {
                levels.push(1);
                present.push(i64::try_from(number).map_err(|_| {
                    anyhow::anyhow!("export --parquet: column {column} holds {number}, past int64's range; nothing written")
                })?);
            }
            None => levels.push(0),
        }
    }
    Ok(Col::I64(levels, present))
}

fn i32s(values: impl Iterator<Item = Option<i32>>) -> Col {
    let (mut levels, mut present) = (Vec::new(), Vec::new());
    for value in values {
        match value {
            Some(number) => {
                levels.push(1);
                present.push(number);
            }
            None => levels.push(0),
        }
    }
    Col::I32(levels, present)
}

fn bools(values: impl Iterator<Item = bool>) -> Col {
    let present: Vec<bool> = values.collect();
    Col::Bool(vec![1; present.len()], present)
}

/// One Parquet file (one row group) of `columns` under `schema`.
fn write(schema: &str, columns: Vec<Col>) -> anyhow::Result<Vec<u8>> {
    let schema = Arc::new(parse_message_type(schema)?);
    let properties = Arc::new(WriterProperties::builder().build());
    let mut out = Vec::new();
    {
        let mut writer = SerializedFileWriter::new(&mut out, schema, properties)?;
        let mut row_group = writer.next_row_group()?;
        for column in columns {
            let mut column_writer = row_group
                .next_column()?
                .ok_or_else(|| anyhow::anyhow!("the schema has fewer columns than written"))?;
            match column {
                Col::Str(levels, values) => {
                    column_writer.typed::<ByteArrayType>().write_batch(
                        &values,
                        Some(&levels),
                        None,
                    )?;
                }
                Col::I64(levels, values) => {
                    column_writer
                        .typed::<Int64Type>()
                        .write_batch(&values, Some(&levels), None)?;
                }
                Col::I32(levels, values) => {
                    column_writer
                        .typed::<Int32Type>()
                        .write_batch(&values, Some(&levels), None)?;
                }
                Col::Bool(levels, values) => {
                    column_writer
                        .typed::<BoolType>()
                        .write_batch(&values, Some(&levels), None)?;
                }
            }
            column_writer.close()?;
        }
        row_group.close()?;
        writer.close()?;
    }
    Ok(out)
}

/// The request table of one lineage.
pub(crate) fn requests(rows: &[&RequestRow]) -> anyhow::Result<Vec<u8>> {
    let text = |pick: fn(&RequestRow) -> Option<&str>| strs(rows.iter().map(|row| pick(row)));
    let count = |column: &str, pick: fn(&RequestRow) -> Option<u64>| {
        i64s(column, rows.iter().map(|row| pick(row)))
    };
    write(
        "message request {
            optional binary lineage (UTF8); optional binary group_name (UTF8); optional binary group_status (UTF8);
            optional binary request_id (UTF8); optional binary tier (UTF8); optional binary provider (UTF8);
            optional binary model (UTF8); optional binary reason (UTF8); optional binary category (UTF8);
            optional binary selected_tier (UTF8);
            optional int64 uncached_input_tokens; optional int64 cache_read_tokens; optional int64 cache_write_tokens;
            optional int64 output_tokens; optional int64 reasoning_tokens;
            optional binary settlement_state (UTF8); optional binary series (UTF8);
            optional int64 charge_micro_usd; optional int64 recomputed_micro_usd; optional int32 http_status;
        }",
        vec![
            text(|row| Some(&row.lineage)),
            text(|row| Some(&row.group)),
            text(|row| Some(&row.group_status)),
            text(|row| Some(&row.request_id)),
            text(|row| Some(&row.tier)),
            text(|row| row.provider.as_deref()),
            text(|row| row.model.as_deref()),
            text(|row| row.reason.as_deref()),
            text(|row| Some(row.category.as_str())),
            text(|row| row.selected_tier.as_deref()),
            count("uncached_input_tokens", |row| row.uncached_input_tokens)?,
            count("cache_read_tokens", |row| row.cache_read_tokens)?,
            count("cache_write_tokens", |row| row.cache_write_tokens)?,
            count("output_tokens", |row| row.output_tokens)?,
            count("reasoning_tokens", |row| row.reasoning_tokens)?,
            text(|row| Some(&row.settlement_state)),
            text(|row| Some(&row.series)),
            count("charge_micro_usd", |row| row.charge_micro_usd)?,
            count("recomputed_micro_usd", |row| row.recomputed_micro_usd)?,
            i32s(rows.iter().map(|row| row.http_status.map(i32::from))),
        ],
    )
}

/// The case table of one lineage.
pub(crate) fn cases(rows: &[&CaseRow]) -> anyhow::Result<Vec<u8>> {
    let text = |pick: fn(&CaseRow) -> Option<&str>| strs(rows.iter().map(|row| pick(row)));
    write(
        "message case {
            optional binary lineage (UTF8); optional binary group_name (UTF8); optional binary group_status (UTF8);
            optional binary task (UTF8); optional binary trial (UTF8); optional int32 replacement;
            optional binary status (UTF8); optional binary reward (UTF8); optional boolean passed;
            optional boolean skipped; optional int64 started_seq;
        }",
        vec![
            text(|row| Some(&row.lineage)),
            text(|row| Some(&row.group)),
            text(|row| Some(&row.group_status)),
            text(|row| Some(&row.task)),
            text(|row| Some(&row.trial)),
            i32s(rows.iter().map(|row| Some(i32::from(row.replacement)))),
            text(|row| Some(&row.status)),
            text(|row| row.reward.as_deref()),
            bools(rows.iter().map(|row| row.passed)),
            bools(rows.iter().map(|row| row.skipped)),
            i64s("started_seq", rows.iter().map(|row| row.started_seq))?,
        ],
    )
}

/// The group table of one lineage.
pub(crate) fn groups(rows: &[&GroupTableRow]) -> anyhow::Result<Vec<u8>> {
    let text = |pick: fn(&GroupTableRow) -> Option<&str>| strs(rows.iter().map(|row| pick(row)));
    write(
        "message lineage_group {
            optional binary lineage (UTF8); optional binary group_name (UTF8); optional int32 group_order; optional binary kind (UTF8);
            optional binary group_status (UTF8); optional boolean accepted; optional int64 sealed_seq;
            optional int64 predeclared_cases; optional binary source_lineage (UTF8);
            optional binary source_group (UTF8);
        }",
        vec![
            text(|row| Some(&row.lineage)),
            text(|row| Some(&row.group)),
            i32s(
                rows.iter()
                    .map(|row| i32::try_from(row.group_order).map(Some))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| anyhow::anyhow!("export --parquet: a group_order past int32's range; nothing written"))?
                    .into_iter(),
            ),
            text(|row| Some(&row.kind)),
            text(|row| Some(&row.group_status)),
            bools(rows.iter().map(|row| row.accepted)),
            i64s("sealed_seq", rows.iter().map(|row| row.sealed_seq))?,
            i64s("predeclared_cases", rows.iter().map(|row| Some(row.predeclared_cases)))?,
            text(|row| row.source_lineage.as_deref()),
            text(|row| Some(&row.source_group)),
        ],
    )
}

/// One file of the dataset: its path relative to the dataset and bytes.
pub(crate) struct DatasetFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// The partition key of the directories: not `lineage`, so no reader
/// mistakes the directory for the files' own `lineage` column.
pub(crate) const PARTITION_KEY: &str = "lineage_key";
/// What every partition value starts with: a letter, so no reader's type
/// inference reads a lineage such as `001` as the number 1 or
/// `2026-07-10` as a date (lineage labels are letters, digits, `.`, `_`
/// and `-`, so the value needs no escaping).
pub(crate) const PARTITION_PREFIX: &str = "lineage-";
/// The directory name of the layout before issue 31, which `--append`
/// refuses to mix with.
const OLD_PARTITION_KEY: &str = "lineage=";

/// The partition directory of `lineage` in `table`, relative to the dataset.
pub(crate) fn partition(table: &str, lineage: &str) -> PathBuf {
    Path::new(table).join(format!("{PARTITION_KEY}={PARTITION_PREFIX}{lineage}"))
}

/// A partition of the old layout (`lineage=<label>`, the lineage in the
/// directory only) in `dir`, if any.
fn old_layout_partition(dir: &Path) -> Option<PathBuf> {
    TABLES.iter().find_map(|table| {
        let entries = std::fs::read_dir(dir.join(table)).ok()?;
        entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .find(|path| {
                path.file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with(OLD_PARTITION_KEY))
            })
    })
}

/// Every file of the state's dataset: three tables x one partition per
/// lineage (a lineage without rows still gets its files, so a second
/// export of it is refused). The file name carries the ledger head it was
/// exported at.
pub(crate) fn dataset(state: &State, head: &LedgerHead) -> anyhow::Result<Vec<DatasetFile>> {
    let (request_rows, case_rows) = report::tables(state);
    let group_rows = report::group_table(state);
    let name = format!(
        "part-{}.parquet",
        &head.head_hash[..16.min(head.head_hash.len())]
    );
    let mut files = Vec::new();
    for lineage in state.lineages.keys() {
        let lineage = lineage.as_str();
        let requests_of: Vec<&RequestRow> = request_rows
            .iter()
            .filter(|row| row.lineage == lineage)
            .collect();
        let cases_of: Vec<&CaseRow> = case_rows
            .iter()
            .filter(|row| row.lineage == lineage)
            .collect();
        let groups_of: Vec<&GroupTableRow> = group_rows
            .iter()
            .filter(|row| row.lineage == lineage)
            .collect();
        let tables: BTreeMap<&str, Vec<u8>> = BTreeMap::from([
            (TABLES[0], requests(&requests_of)?),
            (TABLES[1], cases(&cases_of)?),
            (TABLES[2], groups(&groups_of)?),
        ]);
        for (table, bytes) in tables {
            files.push(DatasetFile {
                path: partition(table, lineage).join(&name),
                bytes,
            });
        }
    }
    Ok(files)
}

/// Writes the dataset into `dir`: staged beside the partitions, then each
/// partition renamed into place. Without `append`, `dir` must be new or
/// empty; with it, no partition of these lineages may exist yet.
pub(crate) fn write_dataset(dir: &Path, files: &[DatasetFile], append: bool) -> anyhow::Result<()> {
    let partitions: Vec<PathBuf> = {
        let mut seen: Vec<PathBuf> = files
            .iter()
            .filter_map(|file| file.path.parent().map(Path::to_path_buf))
            .collect();
        seen.sort();
        seen.dedup();
        seen
    };
    if append {
        if let Some(old) = old_layout_partition(dir) {
            return Err(BadUsage(format!(
                "{} is a partition of the layout before issue 31 (the lineage only in the directory name, which readers infer as a number or a date); export every ledger again into a new directory",
                old.display()
            ))
            .into());
        }
        if let Some(taken) = partitions.iter().find(|part| dir.join(part).exists()) {
            return Err(BadUsage(format!(
                "{} is already in the dataset {}: a lineage is exported once (its rows would count twice)",
                taken.display(),
                dir.display()
            ))
            .into());
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let staging = dir.join(format!(".partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let result = (|| -> anyhow::Result<()> {
        for file in files {
            let path = staging.join(&file.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("create {}", parent.display()))?;
            }
            std::fs::write(&path, &file.bytes)
                .with_context(|| format!("write {}", path.display()))?;
        }
        for part in &partitions {
            let target = dir.join(part);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("create {}", parent.display()))?;
            }
            std::fs::rename(staging.join(part), &target)
                .with_context(|| format!("rename to {}", target.display()))?;
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&staging);
    result
}

#[cfg(test)]
mod tests {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;

    use super::*;

    fn short13() -> State {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/replay-tests/scenarios/short13-accepted.toml"
        ))
        .unwrap();
        let spec: crate::testkit::scenario::Scenario = toml::from_str(&text).unwrap();
        crate::testkit::scenario::run(&spec).unwrap().0.state
    }

    fn rows_of(bytes: Vec<u8>) -> Vec<parquet::record::Row> {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.parquet");
        std::fs::write(&path, bytes).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        reader
            .get_row_iter(None)
            .unwrap()
            .map(|row| row.unwrap())
            .collect()
    }

    /// The written files read back with the parquet crate's own reader:
    /// one row per request, case and target group, values as in the
    /// tables, the lineage only in the partition path.
    #[test]
    fn the_dataset_reads_back() {
        let state = short13();
        let head = LedgerHead {
            head_seq: 1,
            head_hash: "ab".repeat(32),
        };
        let files = dataset(&state, &head).unwrap();
        let paths: Vec<String> = files
            .iter()
            .map(|file| file.path.display().to_string())
            .collect();
        assert_eq!(
            paths,
            [
                "cases/lineage_key=lineage-short13-kimi-2026-11/part-abababababababab.parquet",
                "lineage_groups/lineage_key=lineage-short13-kimi-2026-11/part-abababababababab.parquet",
                "requests/lineage_key=lineage-short13-kimi-2026-11/part-abababababababab.parquet",
            ]
        );
        let (requests, cases) = report::tables(&state);
        let groups = report::group_table(&state);
        let request_rows = rows_of(files[2].bytes.clone());
        assert_eq!(request_rows.len(), requests.len());
        // The lineage is a string column of every file, never only the
        // directory a reader may type as a number or a date (issue 31).
        assert_eq!(
            request_rows[0].get_string(0).unwrap(),
            "short13-kimi-2026-11"
        );
        assert_eq!(request_rows[0].get_string(1).unwrap(), &requests[0].group);
        assert_eq!(
            request_rows[0].get_string(3).unwrap(),
            &requests[0].request_id
        );
        assert_eq!(
            request_rows[0].get_long(17).unwrap(),
            requests[0].charge_micro_usd.unwrap() as i64
        );
        assert_eq!(request_rows[0].get_int(19).unwrap(), 200);
        let case_rows = rows_of(files[0].bytes.clone());
        assert_eq!(case_rows.len(), cases.len());
        assert_eq!(case_rows[0].get_string(0).unwrap(), &cases[0].lineage);
        assert_eq!(case_rows[0].get_string(3).unwrap(), &cases[0].task);
        assert_eq!(case_rows[0].get_bool(8).unwrap(), cases[0].passed);
        let group_rows = rows_of(files[1].bytes.clone());
        assert_eq!(group_rows.len(), 4);
        assert_eq!(group_rows[1].get_string(0).unwrap(), &groups[1].lineage);
        assert_eq!(groups[1].group, "control");
        assert_eq!(group_rows[1].get_string(3).unwrap(), "control");
        assert!(group_rows[1].get_bool(5).unwrap());
        assert_eq!(group_rows[1].get_long(7).unwrap(), 13);
    }

    /// A count past int64's range is refused with the column named, never
    /// clamped; int64's maximum itself is written as it is.
    #[test]
    fn a_count_past_int64_is_refused_not_clamped() {
        let at_bound = i64s("charge_micro_usd", [Some(i64::MAX as u64)].into_iter()).unwrap();
        assert!(matches!(at_bound, Col::I64(_, ref v) if v == &[i64::MAX]));
        let past = i64s("charge_micro_usd", [Some(i64::MAX as u64 + 1)].into_iter());
        let message = past.err().unwrap().to_string();
        assert!(
            message.contains("column charge_micro_usd holds 9223372036854775808"),
            "{message}"
        );
    }

    /// An appended ledger's lineage that is already in the dataset is
    /// refused, and nothing is written.
    #[test]
    fn a_lineage_is_appended_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("dataset");
        let file = |name: &str| DatasetFile {
            path: partition("requests", "l1").join(name),
            bytes: b"x".to_vec(),
        };
        write_dataset(&dir, &[file("part-a.parquet")], false).unwrap();
        let error = write_dataset(&dir, &[file("part-b.parquet")], true).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("lineage_key=lineage-l1 is already in the dataset"),
            "{error}"
        );
        assert!(!dir
            .join("requests/lineage_key=lineage-l1/part-b.parquet")
            .exists());
        let other = DatasetFile {
            path: partition("requests", "l2").join("part-c.parquet"),
            bytes: b"y".to_vec(),
        };
        write_dataset(&dir, &[other], true).unwrap();
        assert!(dir
            .join("requests/lineage_key=lineage-l2/part-c.parquet")
            .exists());
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["requests"], "no staging directory left behind");
    }

    /// A partition value starts with a letter whatever the lineage, and
    /// `--append` onto a dataset of the old layout (`lineage=<label>`) is
    /// refused, nothing written.
    #[test]
    fn partitions_are_strings_to_every_reader_and_the_old_layout_is_not_mixed() {
        for lineage in ["001", "1", "2026-07-10"] {
            assert_eq!(
                partition("cases", lineage),
                Path::new("cases").join(format!("lineage_key=lineage-{lineage}"))
            );
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("dataset");
        std::fs::create_dir_all(dir.join("cases/lineage=001")).unwrap();
        let file = DatasetFile {
            path: partition("cases", "1").join("part-a.parquet"),
            bytes: b"x".to_vec(),
        };
        let error = write_dataset(&dir, &[file], true).unwrap_err();
        assert!(
            error.to_string().contains("layout before issue 31"),
            "{error}"
        );
        assert!(!dir.join("cases/lineage_key=lineage-1").exists());
    }
}
