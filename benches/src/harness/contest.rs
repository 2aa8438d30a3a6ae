//! A contest as data: the contenders (rows) of one table, its title, metric, ratio column and
//! notes; [`Contest::run`] warms every contender up, alternates them (A B A B) for the plan's
//! runs and returns the [`Table`] of their medians, which [`Table::print`] prints and records.

use std::io;

use super::measure::{alternate, Contestant, Measure, Plan};
use super::report::{Metric, Table};

/// One table's contenders and what its title, columns and notes say.
pub struct Contest<'a> {
    /// The title; `{n}` stands for the operations per run, `, median of R runs` follows it.
    title: String,
    metric: Metric,
    /// The ratio column's header (`vs raw`) and the row it is taken against.
    vs: (&'static str, usize),
    notes: Vec<String>,
    rows: Vec<Contestant<'a>>,
}

impl<'a> Contest<'a> {
    /// A contest titled `title` in `metric`, ratios headed `vs` taken against its first row.
    pub fn new(title: impl Into<String>, metric: Metric, vs: &'static str) -> Self {
        Contest {
            title: title.into(),
            metric,
            vs: (vs, 0),
            notes: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Takes the ratios against row `i` instead of the first.
    pub fn against(mut self, i: usize) -> Self {
        self.vs.1 = i;
        self
    }

    /// A contender: its row's name, and what runs `n` operations and measures them.
    pub fn row(
        mut self,
        name: impl Into<String>,
        run: impl FnMut(u64) -> io::Result<Measure> + 'a,
    ) -> Self {
        self.rows.push(Contestant::new(name, run));
        self
    }

    /// Contenders made elsewhere (one per server, say), in order.
    pub fn rows(mut self, rows: impl IntoIterator<Item = Contestant<'a>>) -> Self {
        self.rows.extend(rows);
        self
    }

    /// A line under the table known before the run (a later one: [`Table::print`]).
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Runs the contenders alternately under `plan`; the table of their figures, not yet printed.
    pub fn run(mut self, plan: Plan) -> io::Result<Table> {
        let (series, count) = alternate(&mut self.rows, plan)?;
        let title = self.title.replace("{n}", &count.to_string());
        let title = format!("{title}, median of {} runs", plan.runs);
        let (ratio_label, baseline) = self.vs;
        let (metric, notes) = (self.metric, self.notes);
        Ok(Table {
            title,
            metric,
            ratio_label,
            baseline,
            series,
            notes,
        })
    }
}

impl Table {
    /// Prints the table with `notes` added under it, and records it for `--json`.
    pub fn print(mut self, notes: impl IntoIterator<Item = String>) {
        self.notes.extend(notes);
        print!("{}", self.render());
    }
}
