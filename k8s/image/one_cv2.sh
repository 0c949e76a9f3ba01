#!/bin/sh
# One owner of cv2 in the image: opencv-python-headless.
# rapidocr-onnxruntime (the OCR of `vision: ocr`) asks for opencv-python, whose cv2 needs libGL and glib at import;
# vLLM (GPU image) asks for opencv-python-headless. Both install the same cv2/ files, so whichever went in last
# owns them and removing either breaks the other. Headless is the same cv2 without the GUI (the OCR never opens a
# window) and needs no X/GL system libraries, so it is the one kept, at the version opencv-python had when vLLM did
# not bring its own. `pip check` then reports exactly one line, "rapidocr-onnxruntime ... requires opencv-python,
# which is not installed", which k8s/image/check_image.py accepts and nothing else.
set -eu
ver() { pip show "$1" 2>/dev/null | sed -n 's/^Version: //p'; }
full=$(ver opencv-python)
[ -n "$full" ] || exit 0
headless=$(ver opencv-python-headless)
pip uninstall -y opencv-python
# the uninstall removed the cv2/ files the two share: reinstall headless over them
pip install --no-deps --force-reinstall "opencv-python-headless==${headless:-$full}"
