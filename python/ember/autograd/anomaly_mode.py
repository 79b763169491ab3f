"""Anomaly detection: record each node's forward traceback and report it when
backward fails; check every backward output for NaN."""
import warnings

from .. import _C


class detect_anomaly:
    """Context manager enabling anomaly detection for its block."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        self.prev = _C.is_anomaly_enabled()
        self.prev_nan = _C.is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        _C._set_detect_anomaly(True, self.check_nan)

    def __exit__(self, *exc):
        _C._set_detect_anomaly(self.prev, self.prev_nan)
        return False


class set_detect_anomaly:
    """Turns anomaly detection on or off (immediately; also a context manager)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = _C.is_anomaly_enabled()
        self.prev_nan = _C.is_anomaly_check_nan_enabled()
        if mode:
            warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                          "and should only be enabled for debugging.", stacklevel=2)
        _C._set_detect_anomaly(bool(mode), check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_detect_anomaly(self.prev, self.prev_nan)
        return False


def is_anomaly_enabled() -> bool:
    return _C.is_anomaly_enabled()
