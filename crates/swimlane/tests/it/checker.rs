//! The upstream checker accepts what the tools read and refuses, naming
//! the problem, what they would drop or misread.

use std::path::Path;

use simpler_swimlane::check::check_dir;

use crate::synth::diamond;

fn write(
    dir: &Path,
    records: &serde_json::Value,
    deps: &serde_json::Value,
    names: &[(&str, serde_json::Value)],
) {
    std::fs::write(dir.join("chip_swimlane_records.json"), records.to_string()).unwrap();
    std::fs::write(dir.join("deps.json"), deps.to_string()).unwrap();
    for (n, v) in names {
        std::fs::write(dir.join(n), v.to_string()).unwrap();
    }
}

fn good() -> (serde_json::Value, serde_json::Value, serde_json::Value) {
    let (r, d, n) = diamond();
    (
        serde_json::to_value(r).unwrap(),
        serde_json::to_value(d).unwrap(),
        serde_json::to_value(n).unwrap(),
    )
}

fn problems(
    edit: impl FnOnce(
        &mut serde_json::Value,
        &mut serde_json::Value,
        &mut Vec<(&'static str, serde_json::Value)>,
    ),
) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let (mut r, mut d, n) = good();
    let mut names = vec![("name_map_t_c.json", n)];
    edit(&mut r, &mut d, &mut names);
    write(dir.path(), &r, &d, &names);
    match check_dir(dir.path()) {
        Ok(_) => Vec::new(),
        Err(e) => e,
    }
}

#[test]
fn a_good_folder_passes_with_the_tools_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (r, d, n) = good();
    write(dir.path(), &r, &d, &[("name_map_t_c.json", n)]);
    let n = check_dir(dir.path()).unwrap();
    assert_eq!(
        (
            n.dispatches,
            n.tasks,
            n.edges,
            n.pop_hit,
            n.pop_miss,
            n.loop_iters,
            n.submits
        ),
        (4, 4, 4, 3, 2, 4, 4)
    );
    assert_eq!(n.per_func[&1], 2);
}

#[test]
fn what_the_tools_would_drop_is_refused() {
    let hex = problems(|_, d, _| d["tasks"][1]["task_id"] = "0x0000000000000001".into());
    assert!(
        hex.iter().any(|e| e.contains("task_id must be int()-able")),
        "{hex:?}"
    );
    let five = problems(|r, _, _| r["aicore_tasks"][0] = serde_json::json!([0, 0, 0, 10, 40]));
    assert!(
        five.iter()
            .any(|e| e.contains("aicore_tasks[0]: expected 6")),
        "{five:?}"
    );
    let unjoined = problems(|r, _, _| r["aicpu_tasks"][2][1] = 7.into());
    assert!(
        unjoined
            .iter()
            .any(|e| e.contains("no aicpu_tasks row for (core_id 2, reg_task_id 0)")),
        "{unjoined:?}"
    );
    let no_clock = problems(|r, _, _| r["metadata"]["clock_freq_hz"] = 0.into());
    assert!(
        no_clock.iter().any(|e| e.contains("clock_freq_hz")),
        "{no_clock:?}"
    );
    let two_maps = problems(|_, _, n| {
        let m = n[0].1.clone();
        n.push(("name_map_other.json", m));
    });
    assert!(
        two_maps.iter().any(|e| e.contains("exactly one name_map")),
        "{two_maps:?}"
    );
    let unnamed = problems(|_, _, n| {
        n[0].1["callable_id_to_name"]
            .as_object_mut()
            .unwrap()
            .remove("2")
            .map(|_| ())
            .unwrap()
    });
    assert!(
        unnamed.iter().any(|e| e.contains("no name for func 2")),
        "{unnamed:?}"
    );
    let unresolved =
        problems(|_, d, _| d["tasks"][0]["kernel_ids"] = serde_json::json!([-1, 1, -1]));
    assert!(
        unresolved.iter().any(|e| e.contains("resolves no func id")),
        "{unresolved:?}"
    );
    let dangling = problems(|_, d, _| d["edges"][0]["pred"] = "99".into());
    assert!(
        dangling.iter().any(|e| e.contains("edges[0]")),
        "{dangling:?}"
    );
    let popless = problems(|r, _, _| {
        r["aicpu_scheduler_phases"][0][0]
            .as_object_mut()
            .unwrap()
            .remove("pop_hit");
    });
    assert!(
        popless.iter().any(|e| e.contains("pop_hit and pop_miss")),
        "{popless:?}"
    );
}
