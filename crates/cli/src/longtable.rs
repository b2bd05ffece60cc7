//! Long-format tables, each written twice beside the other outputs: `NAME.csv` (the `csv` crate:
//! RFC 4180 quoting, so a configuration named `a,b` or `say "x"` stays one field) and
//! `NAME.parquet` (typed, nullable columns, Snappy-compressed, a row group per 65,536 rows),
//! which pandas (`pd.read_parquet`, with pyarrow), R (`arrow::read_parquet`) and DuckDB load in
//! one call. A `Table` is built whole, then written; a `Writer` writes rows as they come.
//!
//! A column has a kind (text, unsigned integer, float); every cell may be null ("does not apply",
//! as in results.json), written as an empty CSV field and a Parquet null.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Count,
    Real,
}

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    Count(u64),
    Real(f64),
    Null,
}

impl Value {
    fn fits(&self, kind: Kind) -> bool {
        matches!(
            (self, kind),
            (Value::Null, _)
                | (Value::Text(_), Kind::Text)
                | (Value::Count(_), Kind::Count)
                | (Value::Real(_), Kind::Real)
        )
    }

    fn csv_field(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Count(n) => n.to_string(),
            // Rust prints the shortest text that reads back as the same f64.
            Value::Real(x) => x.to_string(),
            Value::Null => String::new(),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}
impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::Text(s.clone())
    }
}
impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Count(n)
    }
}
impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Count(n.into())
    }
}
impl From<usize> for Value {
    fn from(n: usize) -> Value {
        Value::Count(n as u64)
    }
}
impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::Real(x)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// `[Value; N]` from expressions of any type a cell converts from: `cells![name, 3u64, None::<f64>]`.
macro_rules! cells {
    ($($e:expr),* $(,)?) => { [$($crate::longtable::Value::from($e)),*] };
}
pub(crate) use cells;

/// A table: named, typed columns and rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    columns: Vec<(String, Kind)>,
    rows: Vec<Vec<Value>>,
}

impl Table {
    pub fn new(columns: Vec<(String, Kind)>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
        }
    }

    /// Appends a row; a row of the wrong width or a cell of the wrong kind is refused.
    pub fn push(&mut self, row: Vec<Value>) -> anyhow::Result<()> {
        check(&self.columns, &row)?;
        self.rows.push(row);
        Ok(())
    }

    /// Writes `dir/NAME.csv` and `dir/NAME.parquet`.
    pub fn write(&self, dir: &Path, name: &str) -> anyhow::Result<()> {
        let mut w = Writer::create(dir, name, self.columns.clone())?;
        for row in &self.rows {
            w.push(row.clone())?;
        }
        w.finish()
    }
}

/// A row fits `columns`: as many cells, each of its column's kind.
fn check(columns: &[(String, Kind)], row: &[Value]) -> anyhow::Result<()> {
    if row.len() != columns.len() {
        bail!(
            "a row of {} cells for a table of {} columns",
            row.len(),
            columns.len()
        );
    }
    for (v, (name, kind)) in row.iter().zip(columns) {
        if !v.fits(*kind) {
            bail!("column {name} holds {kind:?} values, not {v:?}");
        }
    }
    Ok(())
}

/// Rows per Parquet row group: what a `Writer` holds in memory at most.
const ROW_GROUP: usize = 64 * 1024;

/// A table written as its rows come: each row goes to NAME.csv at once and to NAME.parquet a row
/// group at a time, so a table of millions of rows (`blk_requests`) never sits in memory whole.
pub struct Writer {
    columns: Vec<(String, Kind)>,
    csv_path: PathBuf,
    parquet_path: PathBuf,
    csv: csv::Writer<File>,
    parquet: ArrowWriter<File>,
    schema: Arc<Schema>,
    pending: Vec<Vec<Value>>,
}

impl Writer {
    /// Creates `dir/NAME.csv` (with its header) and `dir/NAME.parquet`.
    pub fn create(dir: &Path, name: &str, columns: Vec<(String, Kind)>) -> anyhow::Result<Writer> {
        let csv_path = dir.join(format!("{name}.csv"));
        let parquet_path = dir.join(format!("{name}.parquet"));
        let mut csv = csv::Writer::from_path(&csv_path)
            .with_context(|| format!("creating {}", csv_path.display()))?;
        csv.write_record(columns.iter().map(|(n, _)| n))
            .with_context(|| format!("writing {}", csv_path.display()))?;
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|(name, kind)| {
                    let t = match kind {
                        Kind::Text => DataType::Utf8,
                        Kind::Count => DataType::UInt64,
                        Kind::Real => DataType::Float64,
                    };
                    Field::new(name, t, true)
                })
                .collect::<Vec<_>>(),
        ));
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let file = File::create(&parquet_path)
            .with_context(|| format!("creating {}", parquet_path.display()))?;
        let parquet = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .with_context(|| format!("writing {}", parquet_path.display()))?;
        Ok(Writer {
            columns,
            csv_path,
            parquet_path,
            csv,
            parquet,
            schema,
            pending: Vec::new(),
        })
    }

    /// Writes a row; a row of the wrong width or a cell of the wrong kind is refused.
    pub fn push(&mut self, row: Vec<Value>) -> anyhow::Result<()> {
        check(&self.columns, &row)?;
        self.csv
            .write_record(row.iter().map(Value::csv_field))
            .with_context(|| format!("writing {}", self.csv_path.display()))?;
        self.pending.push(row);
        if self.pending.len() >= ROW_GROUP {
            self.flush_row_group()?;
        }
        Ok(())
    }

    /// The pending rows as one Parquet row group.
    fn flush_row_group(&mut self) -> anyhow::Result<()> {
        let rows = std::mem::take(&mut self.pending);
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, kind))| -> ArrayRef {
                let cells = rows.iter().map(|r| &r[i]);
                match kind {
                    Kind::Text => Arc::new(
                        cells
                            .map(|v| match v {
                                Value::Text(s) => Some(s.as_str()),
                                _ => None,
                            })
                            .collect::<StringArray>(),
                    ),
                    Kind::Count => Arc::new(
                        cells
                            .map(|v| match v {
                                Value::Count(n) => Some(*n),
                                _ => None,
                            })
                            .collect::<UInt64Array>(),
                    ),
                    Kind::Real => Arc::new(
                        cells
                            .map(|v| match v {
                                Value::Real(x) => Some(*x),
                                _ => None,
                            })
                            .collect::<Float64Array>(),
                    ),
                }
            })
            .collect();
        let path = &self.parquet_path;
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .with_context(|| format!("building the table of {}", path.display()))?;
        self.parquet
            .write(&batch)
            .and_then(|()| self.parquet.flush())
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Writes what is pending and closes both files.
    pub fn finish(mut self) -> anyhow::Result<()> {
        if !self.pending.is_empty() {
            self.flush_row_group()?;
        }
        self.csv
            .flush()
            .with_context(|| format!("writing {}", self.csv_path.display()))?;
        self.parquet
            .close()
            .with_context(|| format!("writing {}", self.parquet_path.display()))?;
        Ok(())
    }
}

/// Column list from names and kinds.
pub fn columns(cols: &[(&str, Kind)]) -> Vec<(String, Kind)> {
    cols.iter().map(|(n, k)| (n.to_string(), *k)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn sample() -> Table {
        let mut t = Table::new(columns(&[
            ("config", Kind::Text),
            ("n", Kind::Count),
            ("x", Kind::Real),
        ]));
        t.push(vec!["a,b".into(), 3u64.into(), 0.1.into()]).unwrap();
        t.push(vec!["say \"hi\"\nthere".into(), Value::Null, Value::Null])
            .unwrap();
        t
    }

    #[test]
    fn rows_of_the_wrong_shape_or_kind_are_refused() {
        let mut t = sample();
        assert!(t.push(vec!["x".into()]).is_err());
        assert!(t.push(vec![1u64.into(), 1u64.into(), 1.0.into()]).is_err());
        assert_eq!(t.rows.len(), 2);
    }

    #[test]
    fn csv_quotes_and_parquet_keeps_types_and_nulls() {
        let dir = std::env::temp_dir().join(format!("nvmswap-longtable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = sample();
        t.write(&dir, "t").unwrap();
        let mut r = csv::Reader::from_path(dir.join("t.csv")).unwrap();
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][0], "a,b");
        assert_eq!(&rows[1][0], "say \"hi\"\nthere");
        assert_eq!(&rows[0][2], "0.1");
        assert_eq!(&rows[1][1], "");
        let file = std::fs::File::open(dir.join("t.parquet")).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        let b = &batches[0];
        assert_eq!(b.num_rows(), 2);
        assert_eq!(b.schema().field(1).data_type(), &DataType::UInt64);
        let names = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(names.value(0), "a,b");
        let n = b.column(1).as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!(n.value(0), 3);
        assert!(n.is_null(1));
        let x = b.column(2).as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(x.value(0), 0.1);
        assert!(x.is_null(1));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
