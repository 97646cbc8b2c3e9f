"""Operations on trees and ensembles: queries, filter/prune/focus, diff, flat views, text."""
