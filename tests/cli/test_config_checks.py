"""YAML files are read with one error policy: a syntax error names the file and the line.

The dataclass checks (keys, types) are comsim_core.config's: tests/core/test_config.py."""
from __future__ import annotations

import pytest

from comsim_core.errors import UserError, load_yaml


def test_load_yaml_names_file_and_line(tmp_path):
    f = tmp_path / 'c.yaml'
    f.write_text('a: 1\nb: [2\n')
    with pytest.raises(UserError, match=r'c.yaml:3:1: YAML syntax error: expected'):
        load_yaml(f)
    with pytest.raises(UserError, match='policy config .*none.yaml not found'):
        load_yaml(tmp_path / 'none.yaml', 'policy config')
