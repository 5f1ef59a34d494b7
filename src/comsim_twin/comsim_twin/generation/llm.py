"""Optional LLM program writer: ask an OpenAI-compatible chat endpoint for a task program.

The answer is only data: it is parsed as JSON (never evaluated), checked against the primitive
API, and then validated in the twin: it must run and succeed on `validate_seeds` randomised
seeds before it is used. Offline, unset or failing -> the built-in program, with a log line.
Uses urllib only (no new dependencies).
"""
from __future__ import annotations

import json
import logging
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from comsim_core.tasks.primitives import API_DESCRIPTION
from comsim_core.tasks.programs import Program, ProgramError, builtin_program, parse_program
from comsim_core.tasks.registry import get_task
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.generation.randomise import episode_seed, randomise
from comsim_twin.scene import TwinScene

log = logging.getLogger(__name__)


class LLMError(RuntimeError):
    """The endpoint could not be reached or gave no usable answer."""


@dataclass
class Validation:
    ok: bool
    successes: int
    seeds: list[int]
    reasons: list[str] = field(default_factory=list)


def build_prompt(task: str) -> list[dict[str, str]]:
    rules = get_task(task)
    objects = ', '.join(rules.objects)
    return [
        {'role': 'system', 'content': 'You write robot task programs as JSON only, using '
                                      'exactly these primitives.\n' + API_DESCRIPTION},
        {'role': 'user', 'content': f'Task {task}: {rules.goal}. '
                                    f'Objects: {objects}. Answer with the JSON program only.'}]


def extract_program(text: str, task: str) -> Program:
    """The first JSON object or list in the reply (code fences allowed) as a Program."""
    fenced = re.search(r'```(?:json)?\s*(.*?)```', text, re.S)
    body = fenced.group(1) if fenced else text
    start = min([i for i in (body.find('{'), body.find('[')) if i >= 0], default=-1)
    if start < 0:
        raise ProgramError('the reply holds no JSON program')
    try:
        data, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError as exc:
        raise ProgramError(f'the reply is not valid JSON: {exc}') from exc
    return parse_program(data, task)


def request_program(task: str, endpoint: str, model: str, api_key: str | None,
                    timeout_s: float = 60.0) -> str:
    """POST a chat completion; returns the reply text (raises LLMError)."""
    body = json.dumps({'model': model, 'messages': build_prompt(task),
                       'temperature': 0.2}).encode()
    headers = {'Content-Type': 'application/json'}
    if api_key:
        headers['Authorization'] = f'Bearer {api_key}'
    req = urllib.request.Request(endpoint, data=body, headers=headers, method='POST')
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            reply = json.loads(resp.read().decode())
        return str(reply['choices'][0]['message']['content'])
    except (urllib.error.URLError, OSError, KeyError, IndexError, ValueError) as exc:
        raise LLMError(f'LLM endpoint {endpoint}: {type(exc).__name__}: {exc}') from exc


def validate_program(program: Program, base: TwinScene, task: str, cfg: GenerationConfig,
                     backend, seeds: int = 3, seed: int = 12345) -> Validation:
    """Run the program (no rendering) on `seeds` randomised layouts; ok if all succeed."""
    from comsim_twin.generation.episode import run_episode
    ep_seeds = [episode_seed(seed, task, i) for i in range(seeds)]
    reasons, wins = [], 0
    for s in ep_seeds:
        try:
            out = run_episode(backend, randomise(base, task, cfg, s), program, s, cfg)
        except ProgramError as exc:
            return Validation(False, wins, ep_seeds, reasons + [f'seed {s}: {exc}'])
        wins += out.success
        if not out.success:
            reasons.append(f'seed {s}: {out.reason}')
    return Validation(wins == len(ep_seeds), wins, ep_seeds, reasons)


def choose_program(task: str, base: TwinScene, cfg: GenerationConfig, backend=None) -> Program:
    """An LLM-written program that passed validation, else the built-in one (logged)."""
    llm = cfg.llm or {}
    endpoint, model = str(llm.get('endpoint') or ''), str(llm.get('model') or '')
    if not endpoint or not model:
        log.info('LLM program writer off (llm.endpoint/model unset): built-in program for %s',
                 task)
        return builtin_program(task)
    try:
        text = request_program(task, endpoint, model, os.environ.get(
            str(llm.get('api_key_env') or '')), float(llm.get('timeout_s', 60)))
        program = extract_program(text, task)
    except (LLMError, ProgramError) as exc:
        log.warning('LLM program writer failed (%s): built-in program for %s', exc, task)
        return builtin_program(task)
    own = backend is None
    if own:
        from comsim_twin.backends import make_backend
        backend = make_backend(cfg.backend)
    try:
        result = validate_program(program, base, task, cfg, backend,
                                  int(llm.get('validate_seeds', 3)))
    finally:
        if own:
            backend.close()
    if not result.ok:
        log.warning('LLM program for %s failed validation (%d/%d: %s): built-in program',
                    task, result.successes, len(result.seeds), '; '.join(result.reasons))
        return builtin_program(task)
    log.info('LLM program for %s validated on %d seeds: %s', task, len(result.seeds),
             program.to_json())
    return program
