"""Token classification (task ``token-classification``, decision 282): named entities. Each
text sample's words (the line split on single spaces) carry an IOB2 tag each; the model gives
a score per token and label, each word takes the label of its first sub-token, and entities
are scored as seqeval scores them (``truth``, ``words``, ``entities``)."""
