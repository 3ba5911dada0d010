"""Reports: SubmissionResults (and the class's gradebook) -> what people read: the terminal, Markdown/HTML
feedback, annotated notebooks, the class report and dashboard, CSV, Gradescope's results.json, similarity.
Each format is a module that reads the result model's fields; none reaches back into grading or the sandbox.
"""
