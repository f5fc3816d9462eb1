"""``python -m agenticlens_frames``: the ``agenticlens-frames`` command line, for an
environment whose scripts folder is not on the PATH (a venv not activated, ``pip install
--user``, a notebook's kernel). The same entry point as the console script."""

from __future__ import annotations

if __name__ == "__main__":  # imported (by a tool that walks the package), it runs nothing
    from .cli import main

    main()
