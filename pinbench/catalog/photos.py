"""Real photos as datasets of image files: the JPEG/PNG photos that scikit-learn
(``sklearn/datasets/images``) and scikit-image (``skimage/data``) ship, copied byte for byte
(each pinned by its sha256, so a package that ships other bytes stops the build).

- ``photos-imagenet``: five photos in an imagefolder layout, each in the folder of the ImageNet
  class it was hand-labelled with (WordNet id), with ImageNet's 1000 synsets as class names;
- ``photos-open-nsfw``: six photos (the five and scikit-image's astronaut) as Open-NSFW's
  documented pipeline stores an image before its crop (see ``pinbench.catalog.nsfw``), all in
  the class ``sfw``.

The class-names file ``data/imagenet_synsets.txt`` is the ILSVRC-2012 synset list (``LOC_synset
_mapping.txt`` of the ImageNet localisation challenge: one ``wnid words`` line per class, in
class-index order, which is sorted by wnid), taken from the public repository
``JasmineLi-805/res18``; the ids and words are WordNet 3.0's (Princeton WordNet licence).
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinbench.artifacts.digest import hash_file
from pinbench.catalog.files import dump
from pinbench.errors import UserError

IMAGENET = "photos-imagenet"
VERSION = "1.0.0"
SYNSETS = Path(__file__).with_name("data") / "imagenet_synsets.txt"
SYNSETS_SHA256 = "4f04dc0131b72a3463ac1ff62df6d2da5d98388e1f843f542a44f81898188ceb"


@dataclass(frozen=True, slots=True)
class Photo:
    name: str
    package: str
    """The import package that ships it."""
    path: str
    """Its path inside that package."""
    sha256: str
    licence: str
    wnid: str | None
    """The hand-assigned ImageNet class, or None for a photo no ImageNet class fits."""
    why: str
    """The reasoning behind the label."""


PHOTOS = (
    Photo(
        "china",
        "sklearn",
        "datasets/images/china.jpg",
        "8378025ad2519d649d02e32bd98990db4ab572357d9f09841c2fbfbb4fefad29",
        "CC-BY-2.0 (danielbuechele on Flickr, photo 6061409035)",
        "n03877845",
        "palace: the Tower of Buddhist Incense of Beijing's Summer Palace, a Qing imperial "
        "palace; ImageNet has no tower or pagoda class ('monastery' and 'bell cote' are the "
        "near misses)",
    ),
    Photo(
        "flower",
        "sklearn",
        "datasets/images/flower.jpg",
        "a77f6ec41e353afdf8bdff2ea981b2955535d8d83294f8cfa49cf4e423dd5638",
        "CC-BY-2.0 (vultilion on Flickr, photo 6056698931)",
        "n11939491",
        "daisy: an orange pompon dahlia; ImageNet-1k's only flower classes are 'daisy' and "
        "'yellow lady's slipper', and its 'daisy' synset is a composite (Asteraceae) flower "
        "head, the dahlia's family: the nearest class, not an exact one",
    ),
    Photo(
        "chelsea",
        "skimage",
        "data/chelsea.png",
        "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb",
        "CC0-1.0 (Stefan van der Walt)",
        "n02123045",
        "tabby: a brown mackerel tabby (striped coat, the 'M' on the forehead); 'tiger cat' "
        "and 'Egyptian cat' are ImageNet's look-alike classes",
    ),
    Photo(
        "coffee",
        "skimage",
        "data/coffee.png",
        "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7",
        "CC0-1.0 (Rachel Michetti, courtesy of Pikolo Espresso Bar)",
        "n07920052",
        "espresso: a demitasse of espresso with crema on its saucer; 'cup' is the near miss",
    ),
    Photo(
        "rocket",
        "skimage",
        "data/rocket.jpg",
        "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c",
        "public domain (SpaceX)",
        "n03773504",
        "missile: a Falcon 9 on its launch pad; ImageNet has no space-rocket class and its "
        "'missile' images are rockets on pads ('projectile, missile' is the near miss)",
    ),
    Photo(
        "astronaut",
        "skimage",
        "data/astronaut.png",
        "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
        "public domain (NASA)",
        None,
        "a portrait of Eileen Collins: ImageNet-1k has no class for a person",
    ),
)

LICENCE = "CC-BY-2.0 AND CC0-1.0 AND LicenseRef-public-domain"


class PhotoMissing(UserError):
    """A photo the catalog copies is not where its package ships it, or not the bytes pinned."""

    def __init__(self, *, photo: str, path: str, reason: str) -> None:
        super().__init__(f"catalog photo {photo} ({path}): {reason}")
        self.photo = photo
        self.path = path
        self.reason = reason


def package_dir(package: str) -> Path:
    """Where an installed package lives, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise PhotoMissing(
            photo="-", path=package, reason="the package is not installed (the catalog extra)"
        )
    return Path(spec.origin).parent


def source(photo: Photo) -> Path:
    """The photo's file in its installed package, checked against its pinned sha256."""
    path = package_dir(photo.package) / photo.path
    shown = f"{photo.package}/{photo.path}"
    if not path.is_file():
        raise PhotoMissing(photo=photo.name, path=shown, reason="no such file")
    digest, _ = hash_file(path)
    if digest.hex != photo.sha256:
        raise PhotoMissing(
            photo=photo.name,
            path=shown,
            reason=f"sha256 {digest.hex}, expected {photo.sha256} (another package version?)",
        )
    return path


def labelled() -> list[Photo]:
    """The photos with an ImageNet class."""
    return [p for p in PHOTOS if p.wnid is not None]


def nested_entry(root: Path, base: Path, path: Path) -> dict[str, Any]:
    """A ``files`` entry whose artifact path keeps the folders below ``base``."""
    digest, size = hash_file(path)
    return {
        "path": path.relative_to(base).as_posix(),
        "sha256": digest.hex,
        "size": size,
        "source": f"file:{path.relative_to(root).as_posix()}",
    }


def synsets_file() -> Path:
    digest, _ = hash_file(SYNSETS)
    if digest.hex != SYNSETS_SHA256:
        raise PhotoMissing(
            photo="synsets", path=str(SYNSETS), reason=f"sha256 {digest.hex} is not the pinned one"
        )
    return SYNSETS


def write_imagenet(root: Path) -> Path:
    """The labelled photos under ``root/photos-imagenet/photos/<wnid>/`` with the synsets file,
    and their dataset manifest."""
    base = root / IMAGENET
    if base.exists():
        shutil.rmtree(base)
    files = []
    for photo in labelled():
        src = source(photo)
        assert photo.wnid is not None
        dest = base / "photos" / photo.wnid / f"{photo.name}{src.suffix}"
        dest.parent.mkdir(parents=True)
        shutil.copyfile(src, dest)
        files.append(nested_entry(root, base, dest))
    shutil.copyfile(synsets_file(), base / "synsets.txt")
    files.append(nested_entry(root, base, base / "synsets.txt"))
    return dump(
        root / f"dataset-{IMAGENET}.yaml",
        {
            "kind": "dataset",
            "name": IMAGENET,
            "version": VERSION,
            "description": (
                f"{len(files) - 1} real photos shipped by scikit-learn and scikit-image, "
                "hand-labelled with ImageNet classes (see pinbench/catalog/photos.py for why "
                "each label)"
            ),
            "license": LICENCE,
            "samples": len(files) - 1,
            "data": {"format": "images", "path": "photos"},
            "labels": {"format": "imagefolder", "names": "synsets.txt", "classes": 1000},
            "files": files,
            "attributes": {p.name: p.licence for p in labelled()},
        },
    )
