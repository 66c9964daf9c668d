"""OSWorld's crashes as `EvalError`: one mechanism for every metric and getter that mirrors an
OSWorld function which raises on bad input (a missing rule key, a None where a list belongs, a file
that is not a document, an image Pillow cannot open) instead of scoring it.

OSWorld's `DesktopEnv.evaluate` lets such an exception end the scoring; ours raise `EvalError`
naming the metric and the library error (chained as `__cause__`), so the rollout ends `eval_error`.
Only the error classes that bad input makes Python and the file libraries raise are converted
(`INPUT_ERRORS` and the document libraries' own bases); anything else (a `NameError`, an
`AssertionError` of ours, an env transport `EnvError`) propagates unchanged: a bug shows as a bug.
A `RuleError` of the shared rule matcher gets the metric's name in front.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from services.runner.osworld.errors import EvalError
from services.runner.osworld.rules import RuleError

INPUT_ERRORS: tuple[type[BaseException], ...] = (
    AttributeError,
    LookupError,  # KeyError, IndexError
    TypeError,
    ValueError,  # JSONDecodeError, UnicodeDecodeError
    ArithmeticError,  # ZeroDivisionError
    NotImplementedError,  # python-pptx: a shape of an unrecognized type
    OSError,  # a missing file; Pillow's UnidentifiedImageError
    SyntaxError,  # xml.etree.ElementTree.ParseError and lxml's XMLSyntaxError derive from it
    zipfile.BadZipFile,
    re.error,
    sqlite3.Error,  # a file that is not a database, a query on a missing table or column
)
"""What Python, numpy, json, zipfile and the XML parsers raise when OSWorld's function meets bad input."""


@functools.cache
def _library_errors() -> tuple[type[BaseException], ...]:
    """The base exception classes of the document libraries (python-docx, python-pptx, openpyxl, pypdf)."""
    from docx.exceptions import PythonDocxError
    from docx.opc.exceptions import OpcError
    from openpyxl.utils.exceptions import InvalidFileException
    from pptx.exc import PythonPptxError
    from pypdf.errors import PyPdfError

    return (PythonDocxError, OpcError, PythonPptxError, InvalidFileException, PyPdfError)


@contextmanager
def input_errors(name: str, *extra: type[BaseException]) -> Iterator[None]:
    """Run the body; an input error (`INPUT_ERRORS`, the document libraries' errors, `extra`) becomes
    `EvalError("<name>: cannot score this input (<error>)")`.

    Raises: EvalError naming `name` and the original exception; other EvalErrors pass through
    (a RuleError gets `name` in front).
    """
    try:
        yield
    except RuleError as exc:  # raised by the shared rule matcher, which does not know the metric
        raise EvalError(f"{name}: {exc}") from exc
    except EvalError:
        raise
    except (*INPUT_ERRORS, *_library_errors(), *extra) as exc:
        raise EvalError(f"{name}: cannot score this input ({type(exc).__name__}: {exc})") from exc


F = TypeVar("F", bound=Callable[..., Any])


def crashes_as_eval_error(name: str, *extra: type[BaseException]) -> Callable[[F], F]:
    """Decorator form of `input_errors` for a whole metric or getter `name`."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with input_errors(name, *extra):
                return function(*args, **kwargs)

        return cast(F, wrapper)

    return decorate
