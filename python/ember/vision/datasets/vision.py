"""VisionDataset: root, transform and target_transform, as torchvision's base class."""
import os

from ...utils.data import Dataset


class VisionDataset(Dataset):
    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        if isinstance(root, str):
            root = os.path.expanduser(root)
        self.root = root
        has_transforms = transforms is not None
        if has_transforms and (transform is not None or target_transform is not None):
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = transforms

    def __repr__(self):
        lines = [f"Dataset {self.__class__.__name__}", f"    Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"    Root location: {self.root}")
        lines += [f"    {line}" for line in self.extra_repr().splitlines()]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}".replace("\n", "\n    "))
        if self.target_transform is not None:
            lines.append(f"    Target transform: {self.target_transform!r}")
        return "\n".join(lines)

    def extra_repr(self):
        return ""
