"""Helpers the model definitions share."""


def _make_divisible(v, divisor, min_value=None):
    """``v`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``), never
    more than 10% below ``v``: channel counts as the original TensorFlow models chose them."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v
