"""warn_earlier_run: what the trainer says when a fresh run starts in a folder that holds another run."""

from __future__ import annotations

from psgrpo.checkpoints.trainer_mixin import warn_earlier_run


def test_it_names_what_the_folder_holds_and_offers_resuming_only_a_complete_checkpoint(tmp_path, caplog):
    (tmp_path / "metrics.jsonl").write_text("{}\n")
    (tmp_path / "checkpoint-4").mkdir()  # no completion marker: nothing to resume
    with caplog.at_level("WARNING", logger="psgrpo.checkpoints.trainer_mixin"):
        warn_earlier_run(str(tmp_path))
    (record,) = caplog.records
    assert f"output_dir {tmp_path} already holds a run (metrics.jsonl, checkpoint-4)" in record.getMessage()
    assert "no complete checkpoint to resume from" in record.getMessage()


def test_an_empty_or_missing_folder_is_quiet(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="psgrpo.checkpoints.trainer_mixin"):
        warn_earlier_run(str(tmp_path))
        warn_earlier_run(str(tmp_path / "not-yet"))
    assert not caplog.records


def test_a_complete_checkpoint_is_offered_to_resume(tmp_path, caplog):
    from psgrpo.checkpoints.atomic import write_marker

    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_text('{"global_step": 4}')
    write_marker(checkpoint, 4)
    with caplog.at_level("WARNING", logger="psgrpo.checkpoints.trainer_mixin"):
        warn_earlier_run(str(tmp_path))
    (record,) = caplog.records
    assert "continue it from checkpoint-4 with train(resume_from_checkpoint=True)" in record.getMessage()
