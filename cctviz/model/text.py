"""Text columns of the model's tables: always object dtype.

Names and attributes come from profiles and may hold any text, lone surrogates
included (undecodable bytes read with ``surrogateescape``). pandas 3 stores
strings in a pyarrow-backed ``str`` dtype by default, which rejects surrogates,
matches regular expressions with RE2 instead of Python's ``re`` and makes two
equal tables compare unequal by dtype. The model keeps text as Python objects
whatever pandas' default is.
"""

from __future__ import annotations

import pandas as pd


def is_text_dtype(dtype) -> bool:
    """True for pandas' string dtypes (``str``, ``string``), not for object.

    Example:
        >>> is_text_dtype(pd.StringDtype()), is_text_dtype(object)
        (True, False)
    """
    return isinstance(dtype, pd.StringDtype)


def text_as_object(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every string-dtype column as object (in place; returned).

    Example:
        >>> df = pd.DataFrame({"name": pd.array(["a", "b"], dtype="string"), "x": [1, 2]})
        >>> text_as_object(df).dtypes.astype(str).tolist()
        ['object', 'int64']
    """
    for col in df.columns[[is_text_dtype(t) for t in df.dtypes]]:
        df[col] = df[col].astype(object)
    return df
