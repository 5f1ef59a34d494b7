"""Scene alignment: the twin scene (object poses, sizes, colours) from an episode's first frames.

`align_episode` is the entry point; the modules below are the steps it chains:
sheet (what the lab measured) -> geometry (calibrated camera maths) -> segmentation (objects vs
table) -> localise (back-projection, fusion, yaw) -> silhouettes + refine (render-and-compare)
-> colours (exposure/white-balance corrected RGB).
"""
from comsim_twin.alignment.align import AlignmentReport, ObjectReport, align_episode, align_images
from comsim_twin.alignment.errors import AlignmentError
from comsim_twin.alignment.sheet import ObjectSheet, SheetObject, load_sheet

__all__ = ['AlignmentError', 'AlignmentReport', 'ObjectReport', 'ObjectSheet', 'SheetObject',
           'align_episode', 'align_images', 'load_sheet']
