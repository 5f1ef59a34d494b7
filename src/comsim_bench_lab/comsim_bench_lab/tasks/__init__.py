"""The lab's side of a task: the registry's task (comsim_core.tasks) bound to the lab config."""
