"""The import graph, enforced: core imports no stage, stages import only core (so the twin
imports neither learning package), and the bench lab, the stand-in for the real lab, is imported
only by tests, benchmarks and the main job (scripts/). Every import counts, inside functions too."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = 'comsim_core'
STAGES = ['comsim_teleop', 'comsim_twin', 'comsim_neural_sim', 'comsim_policy']
LAB = 'comsim_bench_lab'
BRINGUP = 'comsim_bringup'   # launch files and configs; its module asks comsim_core.paths
ALLOWED = {CORE: set(), LAB: {CORE}, BRINGUP: {CORE}, **{stage: {CORE} for stage in STAGES}}


def comsim_imports(path: Path) -> set[tuple[str, int]]:
    """(top-level comsim package, line) of every import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:   # relative imports stay inside their own package
            continue
        found |= {(n.split('.')[0], node.lineno) for n in names if n.startswith('comsim_')}
    return found


def package_files(pkg: str) -> list[Path]:
    return sorted((ROOT / 'src' / pkg / pkg).rglob('*.py'))


def test_every_package_is_covered():
    assert sorted(p.name for p in (ROOT / 'src').iterdir() if (p / 'setup.py').exists()) == \
        sorted(ALLOWED)


@pytest.mark.parametrize('pkg', sorted(ALLOWED))
def test_package_imports_only_what_its_layer_may(pkg):
    bad = [f'{path.relative_to(ROOT)}:{line} imports {other}'
           for path in package_files(pkg)
           for other, line in sorted(comsim_imports(path))
           if other != pkg and other not in ALLOWED[pkg]]
    assert not bad, '\n'.join(bad)


def test_bench_lab_is_imported_only_by_tests_benches_and_the_main_job():
    users = [path for folder in ('src', 'scripts', 'launch', 'bench', 'fixtures', 'tests')
             for path in (ROOT / folder).rglob('*.py')
             if any(other == LAB for other, _ in comsim_imports(path))]
    allowed = [ROOT / 'tests', ROOT / 'bench', ROOT / 'fixtures', ROOT / 'scripts',
               ROOT / 'src' / LAB]
    outside = [str(p.relative_to(ROOT)) for p in users
               if not any(p.is_relative_to(folder) for folder in allowed)]
    assert not outside, outside


def test_the_checker_sees_imports_inside_functions(tmp_path):
    f = tmp_path / 'm.py'
    f.write_text('def f():\n    from comsim_twin.scene import TwinScene\n    import comsim_policy\n'
                 'from . import sibling\n')
    assert comsim_imports(f) == {('comsim_twin', 2), ('comsim_policy', 3)}


def test_benches_and_fixtures_do_not_reach_into_tests():
    """bench/ and fixtures/ import what tests share from fixtures/, never from tests/."""
    test_modules = {p.stem for p in (ROOT / 'tests').rglob('*.py')}
    bad = []
    for path in sorted([*(ROOT / 'bench').rglob('*.py'), *(ROOT / 'fixtures').rglob('*.py')]):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Constant) and node.value == 'tests':
                bad.append(f'{path.relative_to(ROOT)}:{node.lineno} names tests/')
                continue
            else:
                continue
            bad += [f'{path.relative_to(ROOT)}:{node.lineno} imports {n}' for n in names
                    if n.split('.')[0] in test_modules | {'tests'}]
    assert not bad, '\n'.join(bad)
