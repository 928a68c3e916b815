//! The server section of the report.

use std::fmt::Write as _;

use super::{ServerFigures, Timing};

fn timing_row(md: &mut String, t: &Timing) {
    let (median, min, max) = t.spread();
    let _ = writeln!(
        md,
        "| {} | {median:.1} ms | {min:.1} – {max:.1} ms |",
        t.what
    );
}

/// The server section, in markdown.
pub(crate) fn markdown(figures: &ServerFigures) -> String {
    let mut md = String::from(
        "\n### The API server alone\n\nIn-process requests to the server's router (no socket, no client).\n\n\
         | watch fan-out, one writer | watchers | events | deliveries | deliveries/s |\n|---|---|---|---|---|\n",
    );
    for f in &figures.fanout {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.0} |",
            if f.selected {
                "each watcher selects `team=team-N` (a fifth of the pods)"
            } else {
                "every watcher sees every pod"
            },
            f.watchers,
            f.events,
            f.deliveries,
            f.deliveries as f64 / f.secs
        );
    }
    md.push_str(&format!(
        "\n| list ({} samples) | median | fastest – slowest |\n|---|---|---|\n",
        super::SAMPLES
    ));
    for t in &figures.lists {
        timing_row(&mut md, t);
    }
    match &figures.etcd {
        Ok(e) => {
            let _ = writeln!(
                md,
                "\n| on etcd, {} pods | this run |\n|---|---|\n| etcd `put`, 16 in flight | {:.0}/s |\n| server creates, 16 in flight | {:.0}/s ({:.2}× etcd's) |",
                e.pods,
                e.puts_per_s,
                e.creates_per_s,
                e.creates_per_s / e.puts_per_s
            );
            md.push_str("\n| list from etcd | median | fastest – slowest |\n|---|---|---|\n");
            timing_row(&mut md, &e.list);
            match &e.etcdctl {
                Ok(t) => timing_row(&mut md, t),
                Err(why) => {
                    let _ = writeln!(md, "| etcdctl get --prefix | – | {why} |");
                }
            }
        }
        Err(why) => {
            let _ = writeln!(md, "\nNo etcd figures: {why}.");
        }
    }
    md
}
