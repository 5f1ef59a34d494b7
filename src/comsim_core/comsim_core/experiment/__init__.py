"""The paper's experiment as data: its config (arms, counts, cells per scale), the resumable
stage record of a run, and the success table in the paper's layout. The driver that runs the
stages is the main job (scripts/main_job.py), the one place that also reads the bench lab."""
