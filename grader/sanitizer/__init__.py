"""`ladder check --sanitize`: the learner's kernels under compute-sanitizer. `runner` is the process the
sanitizer wraps; `logs` reads the sanitizer's reports and maps them to the learner's lines; `report`
runs each tool and prints the summary."""
