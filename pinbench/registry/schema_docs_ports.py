"""Descriptions of a model manifest's inputs and outputs: every step, every output section
(detection, segmentation, CTC, binary) and their parts, keyed by struct and field name as in
``schema_docs.FIELD_DOCS``, which includes them."""

from __future__ import annotations

from pinbench.registry.schema_docs_ctc import CTC_DOCS

_PORTS: dict[str, dict[str, str]] = {
    # ---------------------------------------------------------------- input steps
    "InputStep": {
        "tokenize": "Turn text samples into token ids (or their attention mask or token type "
        "ids) with a tokenizers file of the model; must be the first step of a text input.",
        "decode": "Decode image files with Pillow (JPEG/PNG/WebP/BMP; the first step, required "
        "for image-file datasets), or bring array samples to a colour mode, taking 3-channel "
        "samples as RGB and 1-channel ones as grayscale.",
        "resize": "Resize each sample's height and width (Pillow's filters, or OpenCV's linear).",
        "max_dimension": "Resize each image so its longer side is the given size, keeping its "
        "aspect ratio (MLModelScope's max_dimension); images of different shapes must be "
        "brought to one size by a later step (pad, letterbox, resize or crop) before they are "
        "stacked. Detection and segmentation runs map predictions back through it.",
        "crop": "Cut a centred region of the given size out of each sample.",
        "pad": "Pad each image to a square of its longer side (no scaling); a detection run "
        "maps boxes back through it.",
        "letterbox": "Scale each image to fit a size keeping its aspect ratio, then pad to the "
        "size; a detection run maps boxes back through it.",
        "normalize": "Turn the samples into float32: (x - mean) / std per channel, or x * scale.",
        "layout": "Reorder the axes, e.g. to channels-first.",
        "color_mode": "Convert between RGB, BGR and grayscale (samples taken as RGB).",
        "dtype": "Cast the samples to an element type.",
        "resize_height": "PaddleOCR's text-line resize (resize_norm_img): scale each sample to "
        "a height keeping its aspect ratio, its width at most max_width, then pad it on the "
        "right to max_width. Detection and segmentation runs refuse it (boxes are not mapped "
        "back through it).",
        "resize_multiple": "PaddleOCR's det resize (DetResizeForTest): scale each image by a "
        "limit on one side keeping its aspect ratio, then round each side to a multiple, so "
        "images of different shapes keep sizes of their own and are fed one at a time "
        "(batch_size 1). Detection runs map boxes back through it; a task that stacks its "
        "outputs (segmentation) needs them of one shape.",
        "decode_audio": "Decode WAV files (PCM 8/16/24/32-bit, the standard library's wave "
        "module) to float32 waveforms in [-1, 1], their channels mixed down or one picked as "
        "declared; the first step, required for audio datasets. A file of another sample rate "
        "than its rate is refused.",
        "resample": "Resample each waveform from its file's sample rate to a rate (SciPy's "
        "resample_poly, computed in NumPy; recorded in details.decoder); it follows "
        "decode_audio directly.",
        "fit_length": "Bring each waveform to a length: pad a shorter one at its end with a "
        "value; a longer one is refused unless crop (then its first samples are kept).",
        "expand_dims": "Add an axis of size 1 to each sample, e.g. a channel axis (reshape "
        "gives a sample any shape of its value count).",
        "zero_mean_unit_var": "Make each waveform zero-mean and unit-variance over its own "
        "samples, (x - mean) / sqrt(var + epsilon) in float32, as a Hugging Face "
        "Wav2Vec2FeatureExtractor with do_normalize computes it; before fit_length, whose "
        "padding is then 0 as the extractor's is.",
    },
    "DecodeAudio": {
        "channel": "Required: 'mix' (the mean of every channel) or the index of the one "
        "channel to keep (0..63; a file with fewer channels is refused, naming it).",
        "rate": "The sample rate (Hz, 1..768000) every file must have; a file of another is "
        "refused, naming it. Required unless a resample step follows, which declares the "
        "rate the model takes instead.",
    },
    "Resample": {
        "rate": "The sample rate (Hz, 1..768000) the model takes; each file is resampled from "
        "its own (the two rates' reduced ratio at most 1024 each way).",
    },
    "FitLength": {
        "length": "The samples every waveform has after the step (1..2^26).",
        "value": "What a shorter waveform is padded with at its end (-1..1; 0 by default).",
        "crop": "true: keep a longer waveform's first length samples; false (the default): a "
        "longer waveform fails the run, naming its file.",
    },
    "ExpandDims": {
        "axis": "Where the new axis goes among each sample's axes, the batch axis not counted "
        "(0: first, -1: last).",
    },
    "ResizeHeight": {
        "height": "The height in pixels (1..16384); the width becomes ceil(height * (w / h)), "
        "computed in floating point as PaddleOCR does.",
        "max_width": "The width every sample is padded to (1..16384); a wider text line is "
        "squeezed to it.",
        "value": "The padding's value (0..255), in the samples' values where the step stands: "
        "PaddleOCR pads with 0 after its normalize. 0 by default; a fraction is refused on "
        "8-bit samples.",
        "method": "The resampling filter, as in resize: 'bilinear' (the default), 'nearest', "
        "'bicubic', 'area' or 'lanczos' (Pillow's, not OpenCV's).",
    },
    "ResizeMultiple": {
        "multiple": "Each side becomes a multiple of this (1..1024): the network's total "
        "stride, 32 (the default) for DBNet; rounded to the nearest (half to even), at least "
        "one multiple.",
        "limit_side": "The side length the limit type compares with (1..16384); 960 by "
        "default, PaddleOCR's det_limit_side_len.",
        "limit_type": "'max' (the default): an image whose longer side is above limit_side is "
        "scaled so that side is limit_side, a smaller one is not scaled; 'min': an image "
        "whose shorter side is below limit_side is scaled so that side is limit_side; "
        "'resize_long': the longer side always to limit_side. The aspect ratio is kept until "
        "each side is rounded.",
        "method": "The resampling filter, as in resize: 'bilinear' (the default), 'nearest', "
        "'bicubic', 'area' or 'lanczos' (Pillow's, not OpenCV's).",
    },
    "Tokenize": {
        "tokenizer": "The Hugging Face tokenizers file (tokenizer.json), among the model's "
        "files; its sha256 is part of the preprocessing cache key.",
        "output": "Which field of the encoding feeds this input: 'input_ids' (the default), "
        "'attention_mask' or 'token_type_ids'.",
        "max_length": "The sequence length every sample is padded to with padding 'fixed', "
        "the most tokens a text may have with 'longest' (1..65536).",
        "truncation": "true: cut longer texts to max_length; false (the default): a longer "
        "text fails the run, naming it.",
        "padding": "'fixed' (the default): every sample padded to max_length; 'longest': "
        "each text at its own length, as transformers' pipelines feed it, a batch of several "
        "padded at the end to its longest inside the timed call (input_ids with the "
        "tokenizer's pad id, attention_mask with 0, token_type_ids with its pad type id); "
        "a tokenizer that pads on the left is refused. Tokenized once before any timed region.",
        "doc_stride": "Question answering only (questions-jsonl samples): a context longer "
        "than one window is cut into windows this many context tokens apart, each one feature "
        "fed to the model, as MLPerf's BERT does (unset: its 128).",
        "max_query_length": "Question answering only: the question's tokens kept, the rest cut "
        "(unset: MLPerf's 64); max_length holds the question, the special tokens and at least "
        "one context token.",
    },
    "Decode": {
        "color_mode": "The colour mode to decode to: 'rgb' (the default), 'bgr' or "
        "'grayscale' (ITU-R 601 luma weights).",
    },
    "Resize": {
        "size": "The target [height, width] in pixels.",
        "method": "The resampling filter: 'bilinear' (the default), 'nearest', 'bicubic', "
        "'area' (box) or 'lanczos'.",
        "keep_aspect_ratio": "If true, scale so the image covers the target size keeping its "
        "aspect ratio, then centre-crop to it; false (the default) stretches to the size.",
    },
    "MaxDimension": {
        "size": "The longer side's length in pixels after the resize (1..16384), up or "
        "down; the shorter side is scaled by the same factor and rounded.",
        "method": "The resampling filter, as in resize: 'bilinear' (the default), 'nearest', "
        "'bicubic', 'area' or 'lanczos'.",
    },
    "Crop": {
        "size": "The region's [height, width] in pixels; a size larger than the sample is an "
        "error when the step runs.",
        "mode": "Where the region is taken: 'center' (the only mode).",
    },
    "Pad": {
        "to": "What to pad to: 'square' (the only mode), a square of the image's longer side.",
        "placement": "Where the image sits: 'top-left' (the default; padding at the bottom and "
        "right, as NudeNet does) or 'center' (odd padding puts the extra pixel right and "
        "bottom).",
        "value": "The padding's pixel value, 0..255 in every channel; 0 (black) by default.",
    },
    "Letterbox": {
        "size": "The target [height, width] in pixels; the image is scaled by the smaller of "
        "height / H and width / W, each side rounded to whole pixels.",
        "placement": "Where the scaled image sits: 'center' (the default, ultralytics' "
        "LetterBox; odd padding puts the extra pixel right and bottom) or 'top-left'.",
        "value": "The padding's pixel value, 0..255 in every channel; 114 (ultralytics' grey) "
        "by default.",
        "method": "The resampling filter of the scaling, as in resize: 'bilinear' (the "
        "default), 'nearest', 'bicubic', 'area' or 'lanczos'.",
    },
    "Normalize": {
        "mean": "Subtracted per channel: one value for all channels or one per channel; "
        "[0.0] by default. Ignored when scale is given.",
        "std": "Divided by per channel after the mean, one value or one per channel; must not "
        "contain 0 and cannot be given with scale. Left out, 1.",
        "scale": "Multiply every value by this instead of (x - mean) / std; cannot be given "
        "with std.",
    },
    "Layout": {
        "to": "The axis order: 'NCHW' or 'CHW' move channels before height and width; 'NHWC' "
        "and 'HWC' keep the samples' channels-last order. The batch axis stays first.",
    },
    "ColorMode": {
        "to": "The colour mode to convert to: 'rgb', 'bgr' or 'grayscale'; the samples must "
        "have 1 or 3 channels.",
    },
    "DType": {
        "to": "The element type to cast to (NumPy names: float32, float16, float64, uint8, "
        "int8, int32, int64, bool).",
    },
    # ---------------------------------------------------------------- output steps
    "OutputStep": {
        "transpose": "Reorder the model's raw output's axes before anything reads it (every "
        "output type but generation): axis j of what is read is axis perm[j] of the output, "
        "so perm[0] is the output's batch axis; a time-first CTC output (T, N, C) with perm "
        "[1, 0, 2] is read as (N, T, C). The output's first step; refused with a streamed "
        "input; an output of another rank fails the run on its first answer.",
        "softmax": "Turn scores into probabilities along an axis. On a classification "
        "output the axis must be the class axis (refused on the first answer otherwise); it "
        "ranks the classes as the scores do, so top-k is computed from the scores, exactly.",
        "argsort": "Replace each row of scores by the class indices sorted by score. On a "
        "classification output: the order its classes are ranked in (descending: false makes "
        "the lowest score the prediction); its last step.",
        "topk": "Keep the indices of the k highest scores of each row, highest first. On a "
        "classification output: the classes its answer keeps (top5 is recorded only where k "
        "is 5 or more); its last step.",
        "pool": "Token states (N, tokens, D) to one vector per sample (embedding outputs).",
        "l2_normalize": "Divide each vector by its Euclidean norm (embedding outputs).",
    },
    "Transpose": {
        "perm": "A permutation of 0..rank-1, one entry per axis of the model's output (at "
        "least 2), each 0..63.",
    },
    "Pool": {
        "mode": "'mean' (the default): the mean over the tokens the mask keeps; 'cls': the "
        "first token's state.",
        "mask": "The input (by name) whose 0/1 values say which tokens count; required for mean.",
    },
    "Softmax": {"axis": "The axis to normalise along; -1 (the default) is the last, the classes."},
    "Argsort": {
        "descending": "true (the default): highest score first; false: lowest first. Ties "
        "keep their index order.",
    },
    "TopK": {"k": "How many class indices to keep per sample, >= 1; 5 by default."},
    # ---------------------------------------------------------------- inputs and outputs
    "LabelsRef": {
        "path": "The class-names file, one of the model's files (same path rules as a file "
        "entry), one name per line. Either this or `metadata`.",
        "sha256": "The labels file's sha256, 64 lowercase hex digits; publishing refuses one "
        "that differs from the file entry's. Left out, the file entry's (filled in at "
        "publish). Not with `metadata`.",
        "metadata": "The key of an ONNX model's metadata entry that names the classes (format "
        "onnx only), read as bytes at publish and at a run, never by loading the model: a dict "
        "literal of class index to name as ultralytics writes `names` ({0: 'person', ...}; "
        "its indexes exactly 0..n-1), a list literal of names, or one name per line. Refused: "
        "a key missing or given twice, a value over 1 MiB, two classes of one name. Left out "
        "of the stored manifest while unset.",
    },
    "Input": {
        "name": "A model input's name, or an integer index into the model's inputs; each "
        "model input is bound to one declared input and every model input must be declared.",
        "type": "What the input carries: 'tensor' (the default) or 'image', both fed as the "
        "dataset's samples through the steps, or 'text', tokenized by its first step. A "
        "model may have several inputs (ONNX Runtime), each its own pipeline from the same "
        "samples.",
        "element_type": "The element type the model takes (float32 by default): checked "
        "against the model where it tells, and the preprocessed samples are cast to it.",
        "shape": "The dimensions after the batch axis, e.g. [3, 224, 224]: the model's rank "
        "must be len(shape) + 1 and each of its static dimensions must equal the declared "
        "one. Empty (the default): not checked. A state's batch axis is at its "
        "state.batch_axis; a constant has no batch axis (its shape is its value's).",
        "steps": "The preprocessing, applied in order to the whole dataset before any timed "
        "region; samples flow as (N, H, W, C) until a layout step. Each step has exactly one "
        "key.",
        "value": "A constant input: a number, or nested lists of numbers (at most 4096, 8 "
        "levels deep), of the element type (whole numbers in range for an integer type, "
        "true/false for bool, finite for a float type), fed unchanged with every call, with no "
        "batch axis (silero-vad's sr: 16000, element_type int64); no steps, type tensor; a "
        "`shape`, if given, must be the value's. Part of the manifest, so of the lockfile. "
        "Left out of the stored manifest while unset.",
        "state": "A state input: zeros of `shape` (required) with the batch's size at "
        "`state.batch_axis`, fed with every call; in a streamed run each chunk's output "
        "`state.next` is fed back to it. No steps, type tensor. Left out of the stored "
        "manifest while unset.",
        "stream": "This input's samples are streamed: each is cut along its first axis into "
        "chunks of `stream.chunk` rows, each fed after the `stream.context` rows before it "
        "(zeros before the sample's start and after its end), one model call per chunk; a "
        "`shape`, if given, starts with context + chunk. One input of a model at most. Left "
        "out of the stored manifest while unset.",
    },
    "State": {
        "batch_axis": "Required: the batch axis's place among the model input's axes, "
        "0..len(shape) (silero-vad's (2, N, 128) state: shape [2, 128], batch_axis 1). A "
        "state without one, or one out of range, is refused.",
        "next": "The model output fed back to this input for the next chunk of a streamed "
        "sample (silero-vad's stateN): its shape and element type must be the state's, checked "
        "on the first call; read beside the declared outputs, never scored, and so not among "
        "them. Needs a streamed input. Left out: zeros every call.",
    },
    "Stream": {
        "chunk": "Rows per chunk (silero-vad: 512 samples at 16 kHz), 1..16777216; a sample's "
        "frame k is its rows [k * chunk, (k + 1) * chunk), the last padded with zeros.",
        "context": "Rows fed again before each chunk (silero-vad: 64), zeros before the "
        "sample's first; 0 by default.",
    },
    "Binary": {
        "threshold": "A probability at or above this (0..1, 0.5 by default) reads as the "
        "positive class (for voice activity: speech; for a binary classifier: class 1).",
        "form": "'probability' (left out: the same): each value is the positive class's "
        "probability, in [0, 1] (another value fails the run); 'logit': each value is the "
        "sigmoid's input, its probability computed in float64 (ROC-AUC ranks the values as "
        "given). Left out of the stored manifest while unset.",
    },
    "Output": {
        "name": "A model output's name, or an integer index into the model's outputs; "
        "outputs not declared are not read (with none declared, all are).",
        "type": "What the output holds: 'tensor' (the default) or 'classification', both "
        "read as class scores; accuracy (top1, and top5 with 5 or more classes) is computed "
        "from classification outputs only; 'embedding': sentence embeddings (after its pool "
        "and l2_normalize steps), scored on a sentence-similarity dataset; 'detection': boxes "
        "read per its `detection` section and scored on a detection dataset (COCO mAP). "
        "'segmentation': one class per pixel, read per its `segmentation` section and scored "
        "on a segmentation dataset (mIoU, pixel accuracy); 'text': CTC scores (N, T, C) "
        "decoded per its `ctc` section and scored on a text-recognition dataset (CER, WER, "
        "exact match); 'binary': the probability of a positive class, e.g. a voice-activity "
        "model's speech per streamed chunk, read per its `binary` section and scored on a "
        "voice-activity dataset (frame F1, precision, recall, ROC-AUC), or a one-sigmoid "
        "classifier's one value per sample scored on a classification dataset of classes 0 "
        "and 1 (accuracy, F1, ROC-AUC); 'generation': a causal "
        "language model's or an encoder-decoder's next-token logits (a Hugging Face folder, "
        "format hf-folder), from which answers are generated token by token for a "
        "text-generation dataset (TTFT, TPOT, tokens/s; ROUGE, exact match, perplexity) or, "
        "by a Whisper folder, a speech-recognition dataset (WER, CER).",
        "steps": "The postprocessing, as the task reading the output applies it: softmax, "
        "argsort and topk on a classification output's (N, classes) scores (argsort or topk "
        "last); every step, in order, on an embedding output; none on the other types. A "
        "step the output's task does not apply is refused at publish, naming it and the "
        "task. Each step has exactly one key.",
        "labels": "The file naming the classes; its path must be among the model's files. "
        "For a detection output it is required: one class name per line, in the order of the "
        "output's class columns, each matched to the dataset's COCO category of that name "
        "(classes with no such category are dropped; an annotated category no class names "
        "fails the run).",
        "detection": "How a 'type: detection' output is read (required for that type, refused "
        "for the others). Left out of the stored manifest while unset.",
        "segmentation": "How a 'type: segmentation' output is read into one class per pixel "
        "(required for that type, refused for the others). Left out of the stored manifest "
        "while unset.",
        "ctc": "How a 'type: text' output is decoded (required for that type, refused for the "
        "others). Left out of the stored manifest while unset.",
        "binary": "How a 'type: binary' output is read (refused for the other types; filled "
        "in with its defaults when left out for that type). Left out of the stored manifest "
        "while unset.",
    },
    "Detection": {
        "layout": "How the detections are laid out: 'yolov8' ((N, 4 + C, anchors): cx, cy, "
        "w, h then C class scores, no objectness; ultralytics YOLOv8/v11 exports), 'yolov5' "
        "((N, anchors, 5 + C): cx, cy, w, h, objectness, C class probabilities; score = "
        "objectness x class) or 'separate' (this output holds the boxes, (N, K, 4); `scores`, "
        "`classes`, `count` and `masks` name the outputs holding the rest, as TensorFlow's "
        "Object Detection API and MLModelScope's boundingbox give them) or 'probability-map' "
        "((N, 1, H, W): one class's probability per pixel, a DBNet text detector's; its "
        "regions become boxes as `probability_map` says, class 0), or a raw head pinbench "
        "decodes: 'yolox', 'gfl' (PicoDet, NanoDet) or 'ssd' (anchors and a box coder), each "
        "with its section of the same name.",
        "box_format": "The boxes' coordinates: 'cxcywh' (the default and, for the packed "
        "layouts, the only one accepted), 'xyxy', 'xywh' or 'yxyx' (TensorFlow's).",
        "normalized": "true: box coordinates are fractions of the model input's width and "
        "height; false (the default): pixels of the model input.",
        "score_threshold": "Boxes whose score is below it are dropped (0..1; 0 by default).",
        "nms": "Per-class greedy non-maximum suppression, when the model does not do it; left "
        "out, none (every box above the threshold is kept, best first).",
        "scores": "Layout separate (required): the output holding each box's score, (N, K). "
        "Left out of the stored manifest while unset, as are the fields below.",
        "classes": "Layout separate: the output holding each box's class index, (N, K), "
        "whole numbers (a float tensor of whole numbers is accepted); left out, every box is "
        "class 0.",
        "count": "Layout separate: the output holding how many of the K boxes are valid, (N,) "
        "or (N, 1); left out, all K are read.",
        "masks": "The output holding each box's mask scores, (N, K, h, w) (instance "
        "segmentation): the run then also scores masks with COCO's twelve segm statistics "
        "(mask_map, mask_map50, ...), and every annotation of the dataset must have a "
        "segmentation.",
        "mask_kind": "Required with masks: 'box' (each mask covers its box and is resized to "
        "it, as Mask R-CNN's are) or 'image' (each mask covers the model input and is mapped "
        "back onto the image like the boxes).",
        "mask_threshold": "A mask pixel belongs to its instance when its score is at least "
        "this (0..1; 0.5 when left out).",
        "probability_map": "Layout probability-map: how the map's regions become boxes "
        "(PaddleOCR's values when left out, filled in when the manifest is read).",
    },
    "ProbabilityMap": {
        "threshold": "A pixel is foreground when its probability is above this (0..1; 0.3).",
        "box_threshold": "A region is a detection when the mean probability of its pixels "
        "(its score) is at least this (0..1; 0.5).",
        "unclip_ratio": "Each box grows on every side by its area x this / its perimeter "
        "(DBNet's unclip; 1.6).",
        "min_size": "A region whose box's shorter side, in map pixels, is below this is "
        "dropped (3).",
        "max_candidates": "At most this many regions are read per map, the first in raster "
        "order (1000).",
    },
    "Segmentation": {
        "form": "How the output gives each pixel's class: 'logits' (a score per class and "
        "pixel, as many classes as the dataset's masks index; the class is the argmax), "
        "'classes' (the class index itself, whole numbers below the dataset's classes) or "
        "'probability' (one foreground score per pixel: class 1 where it is at least "
        "threshold, else 0; a two-class dataset). The output's grid may be coarser or finer "
        "than the model input (at one scale on both axes): each pixel of the original image "
        "takes the class of the grid cell its centre falls in, mapped through the input's "
        "resize, max_dimension, crop, pad and letterbox steps.",
        "layout": "For logits: 'NCHW' (the default; classes on axis 1) or 'NHWC' (classes "
        "last); a classes or probability map is (N, H, W) or has a channel axis of 1 where "
        "the layout puts it.",
        "threshold": "For probability: the foreground threshold (0..1; 0.5 by default).",
    },
    "Nms": {
        "iou": "A box is suppressed when its IoU with a better box of its class (of any class "
        "with class_agnostic) is greater "
        "than this (0..1; 0.45 by default).",
        "max_detections": "At most this many boxes per image are kept, best first (100 by "
        "default; COCO's metrics read at most 100).",
        "class_agnostic": "true: a box suppresses the boxes of every class, not only of its "
        "own (OpenCV's NMSBoxes as NudeNet calls it, YOLOX's multiclass_nms_class_agnostic, "
        "ultralytics' agnostic_nms); unset or false: per class.",
    },
}

PORT_DOCS: dict[str, dict[str, str]] = _PORTS | CTC_DOCS
