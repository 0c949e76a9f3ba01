"""Readers of the RL mixture's nine sources in their released layouts (issue 31).

Every file here is a tiny invented one in the source's released shape (field names as the module docstring of
howeval.training.sources gives them, with where each was read: OpenMMReasoner's verl Parquet configs, MMK12's
Parquet); no released data is read. Issue 41: a row in the columns guessed before (problem / answer) fails."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from howeval.training.mixture import MixtureConfig, build_mixture, main
from howeval.training.sources import READERS, SourceFieldError, read_released


def jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_puzzle_sets_turn_the_option_text_into_its_letter(tmp_path):
    f = jsonl(tmp_path / "data" / "circle_size_number.json", [
        {"image": "images/circle_size_number/0000.png", "question": "What is the missing size?",
         "options": ["1", "3", "5", "7"], "answer": "5", "caption": "c", "explanation": "e", "deduction": "d"},
        {"image": "images/circle_size_number/0001.png", "question": "Which?", "options": ["red", "blue"],
         "answer": "blue"}])
    rows = read_released("PuzzleVQA", str(tmp_path / "data"))
    assert [(r["uid"], r["answer"], r["answer_type"], r["subset"]) for r in rows] == [
        ("PuzzleVQA:circle_size_number:1", "C", "multiple_choice", "circle_size_number"),
        ("PuzzleVQA:circle_size_number:2", "B", "multiple_choice", "circle_size_number")]
    assert rows[0]["image"] == str(tmp_path / "data" / "images/circle_size_number/0000.png")
    assert rows[0]["options"] == ["1", "3", "5", "7"]
    algo = read_released("AlgoPuzzleVQA", str(f), image_root="/imgs")
    assert algo[0]["uid"] == "AlgoPuzzleVQA:circle_size_number:1" and algo[0]["image"] == "/imgs/images/circle_size_number/0000.png"
    jsonl(tmp_path / "bad" / "p.json", [{"image": "x.png", "question": "q", "options": ["a", "b"], "answer": "c"}])
    with pytest.raises(SourceFieldError, match=r"PuzzleVQA: .*p.json row 1: answer: 'c' is not one of the options"):
        read_released("PuzzleVQA", str(tmp_path / "bad"))


def test_chartqa_and_infographicvqa(tmp_path):
    train = tmp_path / "ChartQA Dataset" / "train"
    train.mkdir(parents=True)
    (train / "train_human.json").write_text(json.dumps([
        {"imgname": "41699051005347.png", "query": "What is the peak value?", "label": "58.3"},
        {"imgname": "multi_col_1.png", "query": "Which country leads?", "label": "Canada"}]))
    rows = read_released("ChartQA", str(train / "train_human.json"))
    assert [(r["uid"], r["answer"], r["answer_type"]) for r in rows] == [
        ("ChartQA:train_human:1", "58.3", "decimal_number"), ("ChartQA:train_human:2", "Canada", "free_form")]
    assert rows[0]["image"] == str(train / "png" / "41699051005347.png") and rows[0]["options"] is None

    info = tmp_path / "infovqa"
    (info / "infographicsvqa_images").mkdir(parents=True)
    (info / "infographicsVQA_train_v1.0.json").write_text(json.dumps({
        "dataset_name": "infographicVQA", "dataset_split": "train", "data": [
            {"questionId": 65718, "question": "What percentage use email?", "image_local_name": "37313.jpeg",
             "answers": ["68%", "68"], "answer_type": ["single span"]}]}))
    (r,) = read_released("InfographicVQA", str(info))
    assert (r["uid"], r["answer"], r["answers"], r["answer_type"]) == (
        "InfographicVQA:65718", "68%", ["68%", "68"], "free_form")
    assert r["image"] == str(info / "infographicsvqa_images" / "37313.jpeg")
    (info / "infographicsVQA_train_v1.0.json").write_text(json.dumps({"data": [{"questionId": 1, "question": "q"}]}))
    with pytest.raises(SourceFieldError, match=r"row 1: answers: none of \['answers', 'answer'\] present; rename"):
        read_released("InfographicVQA", str(info))


def test_textbookqa_reads_diagram_questions_only(tmp_path):
    lesson = {"globalID": "L_0002", "lessonName": "earth science and its branches", "questions": {
        "nonDiagramQuestions": {"NDQ_000001": {"beingAsked": {"processedText": "no image"}}},
        "diagramQuestions": {"DQ_000010": {
            "beingAsked": {"processedText": "which layer is the crust?", "rawText": "Which layer is the crust?"},
            "answerChoices": {"b": {"processedText": "b", "rawText": "B"}, "a": {"processedText": "a", "rawText": "A"},
                              "c": {"processedText": "c", "rawText": "C"}},
            "correctAnswer": {"processedText": "b", "rawText": "b"},
            "imagePath": "question_images/earth_layers_1.png", "questionType": "Diagram Multiple Choice"}}}}
    (tmp_path / "tqa_v1_train.json").write_text(json.dumps([lesson]))
    (r,) = read_released("TextbookQA", str(tmp_path / "tqa_v1_train.json"))
    assert (r["uid"], r["question"], r["options"], r["answer"], r["subset"]) == (
        "TextbookQA:DQ_000010", "which layer is the crust?", ["a", "b", "c"], "B", "earth science and its branches")
    assert r["image"] == str(tmp_path / "question_images/earth_layers_1.png")
    (tmp_path / "tqa_v1_train.json").write_text(json.dumps([{"questions": {"nonDiagramQuestions": {}}}]))
    with pytest.raises(SourceFieldError, match="diagramQuestions: no lesson with diagram questions"):
        read_released("TextbookQA", str(tmp_path / "tqa_v1_train.json"))


def test_thinklite_parquet_as_its_users_read_it(tmp_path):
    # the layout of ThinkLite-VL-Hard-11k.parquet in its users' verl conversions: id, problem, answer, image as
    # encoded bytes (a binary column, opened with Image.open(io.BytesIO(row['image']))); before: "an image
    # struct with neither bytes nor path"
    png = b"\x89PNG\r\n\x1a\n-thinklite"
    (tmp_path / "tl").mkdir()
    pq.write_table(pa.table({"id": pa.array([11, 12], pa.int64()), "problem": ["How many?", "Which is larger?"],
                             "answer": ["3", "<answer>B</answer>"], "image": pa.array([png, png + b"2"], pa.binary())}),
                   tmp_path / "tl" / "ThinkLite-VL-Hard-11k.parquet")
    t = read_released("ThinkLite-VL-Hard-11K", str(tmp_path / "tl"))
    assert [(r["uid"], r["question"], r["answer"], r["image"]) for r in t] == [
        ("ThinkLite-VL-Hard-11K:11", "How many?", "3", {"bytes": png, "path": None}),
        ("ThinkLite-VL-Hard-11K:12", "Which is larger?", "B", {"bytes": png + b"2", "path": None})]
    pq.write_table(pa.table({"id": [1], "problem": ["q"], "answer": ["1"], "image": pa.array([b""], pa.binary())}),
                   tmp_path / "tl" / "ThinkLite-VL-Hard-11k.parquet")
    with pytest.raises(SourceFieldError, match="row 1: image"):
        read_released("ThinkLite-VL-Hard-11K", str(tmp_path / "tl"))


def test_hub_sources_take_the_documented_alternatives(tmp_path):
    jsonl(tmp_path / "wemath" / "testmini.json", [
        {"ID": "3steps_1", "question": "What is the area?", "option": "A. 5; B. 6; C. 7; D. No correct answer",
         "answer": "B", "image_path": "3steps_1.png", "knowledge concept": "Area"}])
    (w,) = read_released("WeMath", str(tmp_path / "wemath"))
    assert (w["uid"], w["options"], w["answer"], w["answer_type"]) == (
        "WeMath:3steps_1", ["5", "6", "7", "No correct answer"], "B", "multiple_choice")
    jsonl(tmp_path / "tl" / "train.jsonl", [{"problem": "Find x.", "answer": "<answer>\\frac{1}{2}</answer>", "image": "a.png"},
                                            {"question": "Which?", "solution": "\\boxed{C}", "images": ["b.png"]}])
    t = read_released("ThinkLite-VL-Hard-11K", str(tmp_path / "tl"))
    assert [(r["uid"], r["question"], r["answer"], r["answer_type"]) for r in t] == [
        ("ThinkLite-VL-Hard-11K:train:1", "Find x.", "\\frac{1}{2}", "free_form"),
        ("ThinkLite-VL-Hard-11K:train:2", "Which?", "C", "free_form_or_mc")]
    assert t[1]["image"] == str(tmp_path / "tl" / "b.png")
    jsonl(tmp_path / "mmk" / "x.jsonl", [{"id": 7, "subject": "physics", "problem": "q", "image": "i.png"}])
    with pytest.raises(SourceFieldError, match=r"MMK12: .*x.jsonl row 1: answer: none of \['answer', 'solution'\]"):
        read_released("MMK12", str(tmp_path / "mmk"))
    with pytest.raises(KeyError, match="no released-format reader for 'MathVista'"):
        read_released("MathVista", str(tmp_path))
    assert len(READERS) == 9


def omr_row(i: int, subset: str, answer: str) -> dict:
    """One row in OpenMMReasoner-RL-74K's released layout (verl RL Parquet; howeval.training.sources docstring)."""
    return {"data_source": subset, "ability": "math",
            "prompt": [{"role": "user", "content": f"<image>Question {i} of {subset}? Put the final answer in \\boxed{{}}."}],
            "images": [{"bytes": b"\x89PNG-" + bytes([i]), "path": None}],
            "reward_model": {"style": "rule", "ground_truth": answer}, "extra_info": {"index": i, "split": "train"}}


def write_omr(root, sizes: dict[str, int]):
    """One Parquet shard per config folder, as the Hugging Face release lays its configs out."""
    for sub, n in sizes.items():
        shard = root / sub / "train-00000-of-00001.parquet"
        shard.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist([omr_row(i, sub, str(i % 4)) for i in range(n)]), shard)


def test_openmmreasoner_real_layout_gives_each_row_its_domain(tmp_path):
    write_omr(tmp_path / "omr", {"algopuzzle": 2, "tqa_train": 2, "mmk12": 2, "virl39k": 1, "validation": 3})
    rows = read_released("OpenMMReasoner-RL-74K", str(tmp_path / "omr"))
    assert [(r["uid"], r["subset"], r["domain"], r["answer"]) for r in rows] == [
        ("OpenMMReasoner-RL-74K:algopuzzle:0", "algopuzzle", "logic", "0"),
        ("OpenMMReasoner-RL-74K:algopuzzle:1", "algopuzzle", "logic", "1"),
        ("OpenMMReasoner-RL-74K:mmk12:0", "mmk12", "math", "0"), ("OpenMMReasoner-RL-74K:mmk12:1", "mmk12", "math", "1"),
        ("OpenMMReasoner-RL-74K:tqa:0", "tqa", "document", "0"), ("OpenMMReasoner-RL-74K:tqa:1", "tqa", "document", "1"),
        ("OpenMMReasoner-RL-74K:virl39k:0", "virl39k", "math", "0")]  # the validation config is not read
    assert rows[0]["question"] == "Question 0 of algopuzzle? Put the final answer in \\boxed{}."
    assert rows[0]["image"]["bytes"].startswith(b"\x89PNG-") and rows[0]["answer_type"] == "integer_number"
    # the columns the reader guessed before issue 41 (problem / answer / images) are not the release's: named
    bad = tmp_path / "guess" / "mmk12" / "train.parquet"
    bad.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"id": "o1", "problem": "What is 1+1?", "answer": "2",
                                          "images": [{"bytes": b"x", "path": "a.png"}], "data_source": "mmk12"}]), bad)
    with pytest.raises(SourceFieldError, match=r"OpenMMReasoner-RL-74K: .*train.parquet row 1: prompt"):
        read_released("OpenMMReasoner-RL-74K", str(tmp_path / "guess"))


def test_mmk12_real_layout(tmp_path):
    """FanqingM/MMK12 ``data/*.parquet``: id, subject, question (options inline), answer (a letter), image struct."""
    shard = tmp_path / "mmk12" / "data" / "train-00000-of-00001.parquet"
    shard.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"id": "phy_12", "subject": "physics",
                                          "question": "Which force is larger?\nA. F1\nB. F2", "answer": "B",
                                          "image": {"bytes": b"\x89PNG-m", "path": "phy_12.png"}}]), shard)
    (r,) = read_released("MMK12", str(tmp_path / "mmk12"))
    assert (r["uid"], r["subset"], r["answer"], r["answer_type"]) == ("MMK12:phy_12", "physics", "B", "free_form_or_mc")
    assert r["image"] == {"bytes": b"\x89PNG-m", "path": "phy_12.png"}


def test_wemath_real_row(tmp_path):
    """We-Math's published row layout (its README example: ``ID, split, knowledge concept, question, option`` as one
    ``"A. ...;B. ..."`` string, ``answer``, ``image_path``, ``key``, ``question number``, ``knowledge concept
    description``), option string as released."""
    jsonl(tmp_path / "wemath" / "testmini.json", [
        {"ID": "3steps_165", "split": "testmini", "knowledge concept": "Area of circles",
         "question": "As shown in the figure, what is the area of the flower bed (  ) m²?(π = 3.14)",
         "option": "A. 200.96;B. 3215.36;C. 6280;D. 32; E. No correct answer", "answer": "B",
         "image_path": "3steps/image/165-3.png", "key": "3steps_3", "question number": 1575,
         "knowledge concept description": "Area of ..."}])
    (w,) = read_released("WeMath", str(tmp_path / "wemath"))
    assert (w["uid"], w["options"], w["answer"], w["answer_type"]) == (
        "WeMath:3steps_165", ["200.96", "3215.36", "6280", "32", "No correct answer"], "B", "multiple_choice")
    assert w["image"] == str(tmp_path / "wemath" / "3steps/image/165-3.png")


def test_released_sources_in_a_mixture_leave_virl39k_out_and_write_only_kept_images(tmp_path):
    """OpenMMReasoner in its released layout: virl39k rows left out, each row in its subset's domain, OpenMMReasoner
    drawn first, and only the rows the mixture keeps get their image written."""
    write_omr(tmp_path / "omr", {"mmk12": 4, "virl39k": 4, "tqa_train": 1})
    chart = tmp_path / "chartqa" / "train"
    chart.mkdir(parents=True)
    (chart / "train_human.json").write_text(json.dumps([{"imgname": f"{i}.png", "query": "q?", "label": str(i)}
                                                          for i in range(4)]))
    img_dir = tmp_path / "out" / "images" / "OpenMMReasoner-RL-74K"
    cfg = MixtureConfig(total=4, domains={"math": 0.5, "document": 0.5}, sources=[
        {"name": "OpenMMReasoner-RL-74K", "path": str(tmp_path / "omr"), "format": "released", "image_dir": str(img_dir)},
        {"name": "ChartQA", "path": str(chart / "train_human.json"), "format": "released"}])
    out, comp = build_mixture(cfg)
    assert comp["available"] == {"OpenMMReasoner-RL-74K": 5, "ChartQA": 4} and comp["excluded"]["OpenMMReasoner-RL-74K"] == 4
    assert comp["by_domain_source"] == {"math": {"OpenMMReasoner-RL-74K": 2},
                                        "document": {"OpenMMReasoner-RL-74K": 1, "ChartQA": 1}}
    kept = [r for r in out if r["mixture_source"] == "OpenMMReasoner-RL-74K"]
    assert {r["subset"] for r in kept} == {"mmk12", "tqa"} and len(kept) == 3
    assert sorted(p.name for p in img_dir.iterdir()) == sorted(
        "OpenMMReasoner-RL-74K_" + r["uid"].split(":", 1)[1].replace(":", "_") + ".png" for r in kept)
    no_dir = cfg.model_copy(update={"sources": [cfg.sources[0].model_copy(update={"image_dir": None})]})
    with pytest.raises(ValueError, match="sources.OpenMMReasoner-RL-74K: row .* embeds its image .*give image_dir"):
        build_mixture(no_dir)


def test_cli_reads_a_released_source_relative_to_the_config(tmp_path, capsys):
    jsonl(tmp_path / "puzzle" / "data" / "colors.json",
          [{"image": f"images/{i}.png", "question": "q", "options": ["a", "b"], "answer": "a"} for i in range(3)])
    (tmp_path / "mix.yaml").write_text("total: 2\ndomains: {logic: 1}\nsources:\n"
                                       "  - {name: PuzzleVQA, path: puzzle/data, format: released}\n")
    assert main(["--config", str(tmp_path / "mix.yaml"), "--out", str(tmp_path / "out" / "mix.jsonl")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "out" / "mix.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["answer"] for r in rows} == {"A"}
    assert all(r["image"].startswith(str(tmp_path / "puzzle" / "data" / "images")) for r in rows)
    assert json.loads(capsys.readouterr().out)["by_source"] == {"PuzzleVQA": 2}
